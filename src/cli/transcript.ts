import { characterBoundary } from "../utf16.js";
import { MAX_ANSWER_BYTES } from "./bounded-read.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import { preview, printable } from "./printable.js";
import type { Outputs } from "./terminal-out.js";
import type { RunBody, RunEvent } from "./wire.js";

/**
 * Shows a run's events to a person: the model's text on stdout as it streams, tool
 * activity and approvals' outcomes as lines on stderr, and how the run ended.
 * (Approval requests are shown by `Approvals`, which also answers them.)
 */
export class Transcript {
  readonly #out: Outputs;
  /** Tool names and argument text by tool-call id, from the assistant messages, until the call's result. */
  readonly #calls = new Map<string, { tool: string; input: string }>();
  /** The turn whose request is under way: started, its reply not yet committed; else null. */
  #openTurn: number | null = null;
  /** The text streamed so far in the current turn. */
  #turnText = "";
  /** How much of #turnText is printed: all but a high surrogate that ends it (its pair may come next). */
  #printed = 0;
  /** The most text one turn may stream (kept to compare with its committed message). */
  readonly #maxTurnChars: number;

  constructor(out: Outputs, { maxTurnChars = MAX_ANSWER_BYTES }: { maxTurnChars?: number } = {}) {
    this.#out = out;
    this.#maxTurnChars = maxTurnChars;
  }

  /**
   * The tool a call is for (from its assistant message or its approval request), else the
   * call's id, made printable: the name is the model's own (an unknown tool's too), so it may
   * carry escape sequences meant for the terminal.
   */
  #toolOf(toolCallId: string): string {
    return printable(this.#calls.get(toolCallId)?.tool ?? toolCallId);
  }

  /** How many calls' names and inputs are held: the calls without a result yet. */
  get openCalls(): number {
    return this.#calls.size;
  }

  show(event: RunEvent): void {
    switch (event.type) {
      case "turn.started": {
        // Only a restart cuts a turn and goes on: its request is asked again as the next turn
        // (or, by a server that did not count it, as the same turn once more).
        const cut = this.#openTurn;
        if (cut !== null) {
          const as = cut === event.turn ? "" : ` as turn ${event.turn}`;
          this.#out.note(`[turn ${cut} is asked again${as}: the server restarted during it]`);
        }
        this.#openTurn = event.turn;
        this.#flushHalf();
        this.#turnText = "";
        this.#printed = 0;
        return;
      }
      case "text.delta":
        this.#streamText(event.text);
        return;
      case "message":
        this.#message(event.message);
        return;
      case "approval.requested":
        if (!this.#calls.has(event.toolCallId)) {
          this.#calls.set(event.toolCallId, { tool: event.tool, input: JSON.stringify(event.input) });
        }
        return;
      case "approval.resolved": {
        const tool = this.#toolOf(event.toolCallId);
        const verdict = event.decision === "approve" ? "approved" : "denied";
        this.#out.note(`[approval] ${tool} ${verdict}${event.reason ? `: ${preview(event.reason)}` : ""}`);
        return;
      }
      case "tool.started": {
        const input = this.#calls.get(event.toolCallId)?.input ?? "";
        this.#out.note(`[tool] ${printable(event.tool)} ${preview(input, 200)}`.trimEnd());
        return;
      }
      case "run.finished":
        this.#flushHalf();
        this.#out.endLine();
        this.#out.note(summary(event.run));
        return;
      case "run.started":
        return;
    }
  }

  /**
   * Prints a turn's text and keeps it. A turn past `maxTurnChars` (no agent server streams
   * one: its replies are at most MODEL_MAX_OUTPUT_CHARS, 100 M at most) ends the client as a
   * server error, so endless deltas cannot fill its memory.
   */
  #streamText(text: string): void {
    if (this.#turnText.length + text.length > this.#maxTurnChars) {
      throw new CliError(
        `the server streamed a turn of more than ${this.#maxTurnChars} characters: is AGENT_URL an agent server?`,
        EXIT.server,
      );
    }
    // Text of a new turn starts on a line of its own.
    if (this.#turnText === "") this.#out.endLine();
    this.#turnText += text;
    // A character split over two deltas (a surrogate pair) is printed whole, once its pair came.
    const end = characterBoundary(this.#turnText, this.#turnText.length);
    if (end > this.#printed) this.#out.text(this.#turnText.slice(this.#printed, end));
    this.#printed = end;
  }

  /** A high surrogate held back whose pair never came is printed as what it is: U+FFFD. */
  #flushHalf(): void {
    if (this.#printed >= this.#turnText.length) return;
    this.#out.text("\ufffd");
    this.#printed = this.#turnText.length;
  }

  #message(message: Extract<RunEvent, { type: "message" }>["message"]): void {
    if (message.role === "assistant") {
      this.#openTurn = null;
      // The committed text is what counts; print what the deltas did not carry.
      if (message.content.startsWith(this.#turnText)) this.#streamText(message.content.slice(this.#turnText.length));
      this.#flushHalf();
      for (const call of message.toolCalls ?? []) this.#calls.set(call.id, { tool: call.name, input: call.input });
    } else if (message.role === "tool") {
      const tool = this.#toolOf(message.toolCallId);
      const outcome = message.isError ? `failed (${printable(message.metadata?.errorCode ?? "error")})` : "done";
      this.#out.note(`[tool] ${tool} ${outcome}: ${preview(message.content)}`);
      // Its result ends a call: nothing later names it (a turn asked again names its calls again).
      this.#calls.delete(message.toolCallId);
    }
  }
}

/** How the run ended, in words a person can act on, with its counts. */
function summary(run: RunBody): string {
  const turns = run.stats?.turns;
  const calls = run.stats?.toolCalls;
  const counts =
    turns === undefined || calls === undefined
      ? ""
      : ` (${turns} turn${turns === 1 ? "" : "s"}, ${calls} tool call${calls === 1 ? "" : "s"})`;
  return `[run] ${printable(run.stopReason ?? run.status)}${because(run)}${counts}`;
}

function because(run: RunBody): string {
  if (run.error) return `: ${printable(run.error.message)}`;
  if (run.stopReason === "max_turns") {
    const budget = run.maxTurns === undefined ? "" : ` of ${run.maxTurns}`;
    return `: the turn budget${budget} is spent; go on with --session ${printable(run.sessionId ?? "<id>")}, or allow more with --max-turns`;
  }
  // A cancel (this client's Ctrl-C, another client, a new run interrupting it, a shutdown), a
  // loop guard or a budget: the server says where it stopped, why and what to try.
  if (run.stopDetail) return `: ${printable(run.stopDetail)}`;
  if (run.stopReason === "aborted") return ": the run was cancelled";
  return "";
}
