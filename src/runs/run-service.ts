import { wellFormed } from "../agent/messages.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { IfBusy, RunView } from "../domain/run.js";
import { maybeServerDefault, type WebhookTarget } from "../domain/webhook.js";
import { invalidCursor, notFound } from "../errors.js";
import { isIdOf } from "../ids.js";
import type { SessionService } from "../sessions/session-service.js";
import { isStorageError } from "../store/errors.js";
import { keyOfCursor, PAGE_BYTES, withinBytes } from "../store/page.js";
import type { RunAccess, Store, ToolCallRecord, WebhookListing } from "../store/store.js";
import { HIDDEN_RECEIVER_ERROR, hiddenReceiverReason } from "../webhooks/delivery-reasons.js";
import { checkWebhookTarget } from "../webhooks/target-policy.js";
import type { AdmittedRunObserver } from "./admission-watch.js";
import { checkDecisions } from "./control.js";
import { defaultedFields } from "./idempotency.js";
import type { RunManager, StartedRun } from "./run-manager.js";
import { runViewsWithin } from "./run-plan.js";

export interface StartRunRequest {
  sessionId: string;
  owner: string | null;
  input: string;
  maxTurns?: number;
  contextMaxChars?: number;
  approval?: ApprovalPolicy;
  idempotencyKey?: string;
  maxTokens?: number;
  maxDurationMs?: number;
  maxToolCalls?: number;
  loopRepeatLimit?: number;
  planning?: boolean;
  webhook?: WebhookTarget;
  ifBusy?: IfBusy;
  /** See StartRunInput.interrupts. */
  interrupts?: string;
  /** Told of the run the start creates (see StartRunInput.watch). */
  watch?: AdmittedRunObserver;
  /** Aborted when the client has left (see StartRunInput.gone). */
  gone?: AbortSignal;
}

/** A decision on a pending approval, by the key that owns the run. */
export interface DecisionRequest {
  runId: string;
  owner: string | null;
  toolCallId: string;
  decision: "approve" | "deny";
  reason?: string;
}

/** The server's defaults for what a start request leaves out. */
export interface RunDefaults {
  maxTurns: number;
  loopRepeatLimit: number;
  maxTokens?: number;
  maxDurationMs?: number;
  maxToolCalls?: number;
}

/** A pending or decided approval as clients see it. */
export interface ApprovalView {
  toolCallId: string;
  tool: string;
  input: unknown;
  reason: string | null;
  status: "pending" | "approved" | "denied";
  decisionReason: string | null;
  decidedAt: string | null;
}

function approvalView(call: ToolCallRecord): ApprovalView {
  let input: unknown = call.input;
  try {
    input = JSON.parse(call.input);
  } catch {
    // The model's raw text is shown as it was.
  }
  return {
    toolCallId: call.id,
    tool: call.name,
    input,
    reason: call.approvalReason,
    status: call.decision === "approve" ? "approved" : call.decision === "deny" ? "denied" : "pending",
    decisionReason: call.decisionReason,
    decidedAt: call.decidedAt,
  };
}

/** The page a request asks of one of a run's lists: `cursor` as the previous page gave it. */
export interface RunListPage {
  limit: number;
  cursor: string | null;
}

/** The key a page of a run's list starts after (a turn, a ledger ordinal, an event's seq); INVALID_CURSOR unless one. */
function keyOf(cursor: string | null): number | null {
  if (cursor === null) return null;
  const key = keyOfCursor(cursor);
  if (key === null) throw invalidCursor();
  return key;
}

/** A delivery to the operator's hidden receiver as API keys see it: nothing of it that names the receiver. */
function hiddenReceiverView<D extends Pick<WebhookListing, "url" | "attempts" | "reason">>(
  delivery: D,
): Omit<D, "url"> & { url: null } {
  return {
    ...delivery,
    url: null,
    attempts: delivery.attempts.map((a) => ({ ...a, error: a.error === null ? null : HIDDEN_RECEIVER_ERROR })),
    reason: hiddenReceiverReason(delivery.reason),
  };
}

/** Runs as the HTTP API sees them: every lookup checks that the caller owns the run's session. */
export class RunService {
  constructor(
    private readonly deps: {
      store: Store;
      manager: RunManager;
      sessions: SessionService;
      defaults: RunDefaults;
      webhookPolicy: { signing: boolean; allowPrivate: boolean };
      /**
       * Whether runs whose target is the server's default (WEBHOOK_URL: the operator's receiver)
       * list their deliveries without its URL (see `webhooks`): true with API keys.
       */
      hidesServerDefaultTarget?: boolean;
    },
  ) {}

  async start(request: StartRunRequest): Promise<StartedRun> {
    const session = await this.deps.sessions.forStart(request.sessionId, request.owner);
    this.deps.sessions.checkToolNames({ approval: request.approval });
    this.deps.sessions.checkApprovalCeiling({ approval: request.approval, under: session.approval });
    const { defaults } = this.deps;
    checkWebhookTarget(request.webhook, this.deps.webhookPolicy);
    return this.deps.sessions.starting(session.id, () =>
      this.deps.manager.start({
        session,
        input: wellFormed(request.input),
        maxTurns: request.maxTurns ?? defaults.maxTurns,
        contextMaxChars: request.contextMaxChars,
        limits: {
          maxTokens: request.maxTokens ?? defaults.maxTokens ?? null,
          maxDurationMs: request.maxDurationMs ?? defaults.maxDurationMs ?? null,
          maxToolCalls: request.maxToolCalls ?? defaults.maxToolCalls ?? null,
          loopRepeatLimit: request.loopRepeatLimit ?? defaults.loopRepeatLimit,
          planning: request.planning ?? session.planning,
        },
        approval: request.approval,
        idempotencyKey: request.idempotencyKey,
        defaulted: defaultedFields(request),
        webhook: request.webhook,
        ifBusy: request.ifBusy,
        interrupts: request.interrupts,
        watch: request.watch,
        gone: request.gone,
      }),
    );
  }

  /**
   * Whose the run is and where it stands, if the caller may see it; else NOT_FOUND (never
   * "forbidden": ids are not disclosed). Nothing else of the run is read (see `runs.access`):
   * another key's run costs what no run costs, so its 404 takes no longer, and a request that
   * needs no view of the run reads neither its input nor its plan.
   */
  async access(runId: string, owner: string | null): Promise<RunAccess> {
    const access = await this.deps.store.runs.access(runId);
    if (!access || access.owner !== owner) throw notFound("run", runId);
    return access;
  }

  /** The run if the caller may see it (see `access`); else NOT_FOUND. */
  async get(runId: string, owner: string | null): Promise<RunView> {
    await this.access(runId, owner);
    const run = await this.deps.manager.get(runId);
    if (!run) throw notFound("run", runId);
    return run;
  }

  /** Newest first; at most `limit` runs and PAGE_BYTES of JSON (at least one run). */
  async listForSession(sessionId: string, owner: string | null, page: { limit: number; cursor: string | null }) {
    await this.deps.sessions.access(sessionId, owner);
    if (page.cursor !== null && !isIdOf("run", page.cursor)) throw invalidCursor();
    const result = await this.deps.store.runs.list({ sessionId, ...page });
    const { store, manager } = this.deps;
    const views = await runViewsWithin(store, result.items, PAGE_BYTES);
    // A run executing here (a session's one active run, at most) is shown as GET /runs/{id} shows it: its duration up to now.
    const items = await Promise.all(
      views.map(async (v) =>
        manager.executes(v.id) && v.status !== "finished" ? ((await manager.get(v.id)) ?? v) : v,
      ),
    );
    const cut = views.length < result.items.length;
    const nextCursor = cut ? (views.at(-1)?.id ?? null) : result.nextCursor;
    return withinBytes({ items, nextCursor }, { cursorOf: (r) => r.id });
  }

  async cancel(runId: string, owner: string | null) {
    await this.access(runId, owner);
    return this.deps.manager.cancel(runId);
  }

  /**
   * Resolves when the run has finished, with its final assistant text: null when its last
   * reply called tools (a run that stopped before answering, even if it wrote text with the
   * calls) or it made none, and when storage cannot be read: an end reported while storage
   * fails is answered all the same (a 503 would have its client start the run again). Rejects
   * with `gone`'s reason once it aborts first (the client left): the run goes on.
   */
  async waitForFinish(runId: string, gone?: AbortSignal): Promise<{ run: RunView; text: string | null }> {
    const run = await this.deps.manager.waitForFinish(runId, gone);
    const text = await this.deps.store.messages.finalAnswer(run.sessionId, runId).catch((err: unknown) => {
      if (isStorageError(err)) return null;
      throw err;
    });
    return { run, text };
  }

  /**
   * A page of the run's webhook deliveries, oldest first (the cursor is the seq of the last one's
   * event): each try with its status code, and the next one's time. When the run's target is the
   * server's default and hidesServerDefaultTarget, its deliveries show no URL, nor their tries'
   * error texts, nor a refusal's reason (they name its host or address): API keys set their
   * receivers themselves, and the operator's URL may carry a token. Whether the target is the
   * server's is stored with the run (see ResolvedWebhookTarget), not read off today's WEBHOOK_URL;
   * a target stored without saying is hidden (see maybeServerDefault).
   */
  async webhooks(runId: string, owner: string | null, page: RunListPage) {
    await this.access(runId, owner);
    const { store, hidesServerDefaultTarget = false } = this.deps;
    const [result, hidden] = await Promise.all([
      store.webhooks.page({ runId, after: keyOf(page.cursor), limit: page.limit }),
      hidesServerDefaultTarget ? store.webhooks.targetOf(runId).then(maybeServerDefault) : false,
    ]);
    const items = result.items.map(({ owner: _owner, eventSeq: _seq, nextAttemptAt, ...delivery }) => ({
      ...(hidden ? hiddenReceiverView(delivery) : delivery),
      nextAttemptAt: nextAttemptAt === null ? null : new Date(nextAttemptAt).toISOString(),
    }));
    // Its key is not in a delivery's view: the cursor of a page cut short is its last item's.
    const keys = result.items.map((d) => String(d.eventSeq));
    return withinBytes({ items, nextCursor: result.nextCursor }, { cursorOf: (_, i) => keys[i] as string });
  }

  /** A page of the run's step traces, in turn order (the cursor is the last one's turn). */
  async steps(runId: string, owner: string | null, page: RunListPage) {
    await this.access(runId, owner);
    const result = await this.deps.store.steps.page({ runId, after: keyOf(page.cursor), limit: page.limit });
    return withinBytes(result, { cursorOf: (step) => String(step.turn) });
  }

  /**
   * A page of the run's pending approvals, in the order the model proposed the calls (the cursor
   * is the last one's place in the run's ledger).
   */
  async pendingApprovals(runId: string, owner: string | null, page: RunListPage) {
    await this.access(runId, owner);
    const after = keyOf(page.cursor);
    const result = await this.deps.store.toolCalls.awaitingApproval({ runId, after, limit: page.limit });
    const keys = result.items.map((call) => String(call.ordinal));
    return withinBytes(
      { items: result.items.map(approvalView), nextCursor: result.nextCursor },
      { cursorOf: (_, i) => keys[i] as string },
    );
  }

  /** Decides on the call (see RunManager.decide) and answers with the approval's view, the call's input with it. */
  async decide(params: DecisionRequest): Promise<ApprovalView> {
    await this.access(params.runId, params.owner);
    await this.deps.manager.decide(params);
    const call = await this.deps.store.toolCalls.get(params.runId, params.toolCallId);
    if (!call) throw notFound("approval", params.toolCallId);
    return approvalView(call);
  }

  /**
   * Decides on several calls of one run (a chat message's answers), in order, reading nothing
   * of their inputs (the chat's stream shows the decisions): all are checked against the ledger
   * first (see checkDecisions), and none is applied when one is refused.
   */
  async decideEach(
    runId: string,
    owner: string | null,
    decisions: readonly Omit<DecisionRequest, "runId" | "owner">[],
  ) {
    await this.access(runId, owner);
    await checkDecisions(this.deps.store, runId, decisions);
    for (const decision of decisions) await this.deps.manager.decide({ runId, ...decision });
  }
}
