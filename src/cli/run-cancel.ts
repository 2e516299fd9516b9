import { messageOf } from "../message-of.js";
import type { ApiClient } from "./api-client.js";
import type { Approvals } from "./approvals.js";
import { printable } from "./printable.js";
import { withRetries } from "./retry.js";
import { curlCommand } from "./server-errors.js";
import type { Outputs } from "./terminal-out.js";
import { urlSegment } from "./url-segment.js";
import { RunBody } from "./wire.js";

/**
 * What Ctrl-C does: the first cancels the run (`DELETE /runs/{id}`, at once, or as soon
 * as the run exists) and lets the client wait for its `run.finished`; the second leaves
 * without waiting (`left` resolves).
 */
export class RunCancel {
  #requested = false;
  #delivered = false;
  #runId: string | null = null;
  /** The session a run is being started in (its id not known yet); null: none. */
  #starting: string | null = null;
  #approvals: Approvals | null = null;
  #leave: () => void = () => {};
  readonly left = new Promise<void>((resolve) => {
    this.#leave = resolve;
  });

  constructor(private readonly deps: { client: ApiClient; out: Outputs }) {}

  get requested(): boolean {
    return this.#requested;
  }

  interrupt(): void {
    if (this.#requested) {
      // The run's id is the server's: shown escaped, and in a command as one plain word.
      const runId = this.#runId === null ? null : printable(this.#runId);
      const { target } = this.deps.client;
      const where = `${target.baseUrl}/runs/${urlSegment(this.#runId ?? "")}`;
      const starting = this.#starting === null ? null : urlSegment(this.#starting);
      this.deps.out.note(
        `[run] left without waiting for the end${
          runId === null
            ? starting === null
              ? ""
              : `; a run may have started in session ${starting} (see ${curlCommand(target, `${target.baseUrl}/sessions/${starting}/runs`)})`
            : this.#delivered
              ? `; the server goes on cancelling ${runId}`
              : `; the server has not confirmed the cancel yet (to be sure: ${curlCommand(target, `-X DELETE ${where}`)})`
        }`,
      );
      this.#leave();
      return;
    }
    this.#requested = true;
    this.#approvals?.stop();
    this.deps.out.note("[run] cancelling (Ctrl-C again to leave without waiting)");
    if (this.#runId) void this.#delete(this.#runId);
  }

  /** A run is being started in `sessionId`: leaving before its id is known says so. */
  starting(sessionId: string): void {
    this.#starting = sessionId;
  }

  /** The run exists: a cancel asked for before is sent now. */
  attach(runId: string, approvals: Approvals): void {
    this.#runId = runId;
    this.#approvals = approvals;
    if (this.#requested) {
      approvals.stop();
      void this.#delete(runId);
    }
  }

  async #delete(runId: string): Promise<void> {
    try {
      // A server restarting meanwhile gets the cancel once it is back.
      await withRetries(() =>
        this.deps.client.json({ method: "DELETE", path: `/runs/${encodeURIComponent(runId)}`, schema: RunBody }),
      );
      this.#delivered = true;
    } catch (error) {
      const reason = messageOf(error);
      this.deps.out.note(`[run] the cancel was not delivered: ${printable(reason)}`);
    }
  }
}
