/** What the Store reads of a session's queue of runs (see `Store.runs`). */
export interface QueueReads {
  /** Whether the session has a queued run; none of it is read. One indexed read. */
  anyQueued(sessionId: string): Promise<boolean>;
  /** The ids of the session's queued runs, oldest first (the order they start in); nothing else of them is read. */
  queuedIds(sessionId: string): Promise<string[]>;
  /** The sessions that have a queued run. */
  queuedSessions(): Promise<string[]>;
}
