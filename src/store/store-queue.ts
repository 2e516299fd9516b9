import type { RunRecord } from "./runs.js";

/** What the Store reads of a session's queue of runs (see `Store.runs`). */
export interface QueueReads {
  /** The session's queued runs, oldest first: the order they start in. Each is read whole. */
  queued(sessionId: string): Promise<RunRecord[]>;
  /** Whether the session has a queued run; none of it is read. One indexed read. */
  anyQueued(sessionId: string): Promise<boolean>;
  /** The ids of the session's queued runs, oldest first; nothing else of them is read. */
  queuedIds(sessionId: string): Promise<string[]>;
  /** The sessions that have a queued run. */
  queuedSessions(): Promise<string[]>;
}
