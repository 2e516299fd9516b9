/**
 * Wake-ups between server instances over one database. A notification says only that
 * something was committed (a run's events up to a seq; a control request for a run): what it
 * was is read from the database, the truth. Delivery is best effort: while the listening
 * connection is down notifications are lost, so a listener re-reads what it follows when
 * `resync` is called (after every reconnect) and polls while `connected` is false.
 */
export interface RunNotifications {
  /** Starts listening on the first subscription; the returned function unsubscribes. */
  subscribe(handlers: NotificationHandlers): () => void;
  /** Whether the listening connection is up (notifications arrive). */
  readonly connected: boolean;
  /** Stops listening for good. */
  close(): Promise<void>;
}

export interface NotificationHandlers {
  /** Events of `runId` up to `seq` were committed. */
  events?(runId: string, seq: number): void;
  /** A cancel request or an approval decision for `runId` was committed by some instance. */
  control?(runId: string): void;
  /** An instance gave up its runs' leases (it is stopping): they may be claimed at once. */
  released?(): void;
  /** Listening (again): notifications sent while it was down are lost; re-read what is followed. */
  resync?(): void;
}
