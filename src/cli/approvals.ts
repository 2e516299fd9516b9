import { messageOf } from "../message-of.js";
import type { ApiClient } from "./api-client.js";
import type { AutoApprove } from "./args.js";
import { CliError } from "./cli-error.js";
import { printable } from "./printable.js";
import { withRetries } from "./retry.js";
import type { Outputs } from "./terminal-out.js";
import { ApprovalDecisionBody, type ApprovalRequest } from "./wire.js";

/** An approval shows what is approved exactly (see printable). */
const EXACT = { exact: true };

/** Asks a person about one call; true allows it. Null: the question was withdrawn (`signal`). */
export type Ask = (question: string, signal: AbortSignal) => Promise<boolean | null>;

type Decision = { decision: "approve" | "deny"; reason: string };

/**
 * Answers a run's approval requests, one at a time in the order they came: calls of the
 * tools `--approve` names are approved, the rest asked on the terminal (`ask`), or denied
 * when there is none. A request resolved elsewhere (another client, the timeout) is not
 * asked, and one being asked is withdrawn.
 */
export class Approvals {
  readonly #resolved = new Set<string>();
  readonly #answered = new Map<string, Decision>();
  #queue: Promise<void> = Promise.resolve();
  #current: { toolCallId: string; withdraw: AbortController } | null = null;
  #stopped = false;

  constructor(
    private readonly deps: {
      client: ApiClient;
      runId: string;
      approve: AutoApprove;
      ask: Ask | null;
      out: Outputs;
    },
  ) {}

  requested(request: ApprovalRequest): void {
    // One answer that fails (a bug, say) is said, and the next requests are still answered.
    this.#queue = this.#queue
      .then(() => this.#answer(request))
      .catch((error: unknown) => this.#undelivered(error))
      .catch(() => {});
  }

  resolved(toolCallId: string): void {
    this.#resolved.add(toolCallId);
    if (this.#current?.toolCallId === toolCallId) this.#current.withdraw.abort();
  }

  /** No more answers: the run is being cancelled or has finished. */
  stop(): void {
    this.#stopped = true;
    this.#current?.withdraw.abort();
  }

  async #answer(request: ApprovalRequest): Promise<void> {
    if (this.#stopped || this.#resolved.has(request.toolCallId)) return;
    const { out, approve, ask } = this.deps;
    // Asked again before the answer took effect (a server restarted in between): the same answer.
    const earlier = this.#answered.get(request.toolCallId);
    if (earlier) {
      out.note(`[approval] ${printable(request.tool)} asks again; sending the same answer (${earlier.decision})`);
      await this.#send(request.toolCallId, earlier);
      return;
    }
    out.note(`[approval] ${printable(request.tool, EXACT)} asks for approval: ${printable(request.reason, EXACT)}`);
    out.note(indent(printable(JSON.stringify(request.input, null, 2) ?? "undefined", { ...EXACT, keepLines: true })));
    let decision: Decision;
    if (approve.all || approve.tools.has(request.tool)) {
      decision = {
        decision: "approve",
        reason: `approved by agent-server --approve ${approve.all ? "all" : request.tool}`,
      };
    } else if (ask) {
      const withdraw = new AbortController();
      this.#current = { toolCallId: request.toolCallId, withdraw };
      out.hold();
      const allowed = await ask("Allow this call? [y/N] ", withdraw.signal).finally(() => {
        this.#current = null;
        out.release();
      });
      if (allowed === null) return;
      decision = allowed
        ? { decision: "approve", reason: "approved at the terminal" }
        : { decision: "deny", reason: "denied at the terminal" };
    } else {
      out.note(
        `[approval] no terminal to ask, so it is denied; to allow it, run with --approve ${printable(request.tool)} (or --approve all)`,
      );
      decision = { decision: "deny", reason: "no terminal to ask: denied by agent-server" };
    }
    if (this.#stopped || this.#resolved.has(request.toolCallId)) return;
    this.#answered.set(request.toolCallId, decision);
    await this.#send(request.toolCallId, decision);
  }

  async #send(toolCallId: string, decision: Decision): Promise<void> {
    const path = `/runs/${encodeURIComponent(this.deps.runId)}/approvals/${encodeURIComponent(toolCallId)}`;
    try {
      // A server restarting meanwhile gets the answer once it is back.
      await withRetries(
        () => this.deps.client.json({ method: "POST", path, body: decision, schema: ApprovalDecisionBody }),
        { stopped: () => this.#stopped || this.#resolved.has(toolCallId) },
      );
    } catch (error) {
      // Resolved meanwhile (409) or gone (404): the event stream tells what happened.
      if (error instanceof CliError && (error.status === 409 || error.status === 404)) return;
      this.#undelivered(error);
    }
  }

  #undelivered(error: unknown): void {
    const reason = messageOf(error);
    this.deps.out.note(`[approval] the decision was not delivered: ${printable(reason)}`);
  }
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
}
