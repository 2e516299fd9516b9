import type { RunEvent } from "../domain/run-events.js";
import type { RunRecord } from "../store/runs.js";
import type { RunChange } from "../store/store.js";

/**
 * How a write ended: `ok` (stored), `conflict` (refused by a rule of the data, a
 * StoreConflictError such as a busy session or a lost lease: the database worked), `error`
 * (failed: nothing, or not known what, was stored). A write holding its run's end that got no
 * answer is `ok` when its run, read back, holds that end.
 */
export type CommitOutcome = "ok" | "conflict" | "error";

/** One write of a run as the store took it, or refused it. */
export interface CommittedBatch {
  /**
   * Null only for a queued run's start that failed or was refused (never `ok`): which run it
   * would have started is not known then.
   */
  runId: string | null;
  /** `create_run`: the run's insert with its first events; `commit_run`: any later write (a queued run's start too). */
  operation: "create_run" | "commit_run";
  /** The inserted run (`create_run`), or the queued run the write started; absent otherwise. */
  run?: RunRecord;
  changes: readonly RunChange[];
  events: readonly RunEvent[];
  outcome: CommitOutcome;
  /** How long the store took. */
  seconds: number;
}

/** Committed events handed to the live watchers of their run. */
export interface Delivery {
  runId: string;
  events: number;
  watchers: number;
  /** From the end of the events' commit to the last watcher having them. */
  lagSeconds: number;
}

/**
 * What the server's runs do, as seen from the seams every run passes through: the store's
 * writes (every change and event of a run, in order) and the event hub's deliveries. The
 * loop knows nothing of it; compose.ts injects one, and NO_OBSERVER changes nothing.
 * Implementations must not throw and must not block: they are called on the commit path.
 */
export interface RunObserver {
  committed(batch: CommittedBatch): void;
  delivered(delivery: Delivery): void;
  /**
   * This process no longer executes the run: its end was committed here, or it was given up
   * (stopped by a shutdown, its lease lost to another instance, a write's outcome unknown: told
   * after that write, once it is read back) for another instance or the next start to continue.
   * What is kept of a run given up is dropped.
   */
  left(fact: { runId: string }): void;
}

export const NO_OBSERVER: RunObserver = { committed() {}, delivered() {}, left() {} };
