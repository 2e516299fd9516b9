import type { AgentMessage } from "../agent/messages.js";
import type { RunEventBody } from "../domain/run-events.js";
import type { StoredMessage } from "../domain/stored-message.js";
import type { RunChange } from "../store/store.js";

/** Thrown by a write after the recorder was sealed: this process no longer writes the run. */
export class RunSuspendedError extends Error {
  readonly code = "RUN_SUSPENDED";
  constructor() {
    super("the server is shutting down; the run continues after the restart");
  }
}

/** What a write is made of, built when its turn in the queue comes (seqs are given then). */
export interface WriteBatch {
  changes: RunChange[];
  events: RunEventBody[];
}

/** Gives a message its place in the session, as it will be once the batch is committed. */
export type Stamp = (message: AgentMessage) => StoredMessage;
