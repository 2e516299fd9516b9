import type { RunStatus } from "../domain/run.js";
import type { RunInput } from "./queue.js";

/** The Store's steered inputs (see `Store.inputs`). */
export interface InputStore {
  /**
   * Stores input for a run that takes it (running or awaiting approval); false when the run
   * does not, when an input with this id is stored already (which is left as it is), or when
   * the session has a message of this id (the input was taken). With `max`, refused
   * (`inputs_full`) when the run already has `max` pending inputs besides one of this id:
   * counted in the insert's transaction, one such insert of a run at a time.
   */
  add(input: RunInput, options?: { max?: number }): Promise<boolean>;
  /** The run's inputs not yet taken, oldest first. */
  pending(runId: string): Promise<RunInput[]>;
  /**
   * The run's status while its input `id` is pending; null once it is not (taken, withdrawn,
   * or the run deleted). Neither the input's content nor the run's is read.
   */
  pendingStatus(runId: string, id: string): Promise<RunStatus | null>;
  /**
   * Whether the run's pending input `id` holds `content`, compared in the database (the
   * stored content is not read); null when the run has no pending input of that id.
   */
  pendingHolds(runId: string, id: string, content: string): Promise<boolean | null>;
  /**
   * The finished run input `id` is left on (see `orphaned`), and whether the input holds
   * `content`, compared in the database (the stored content is not read); null when no
   * finished run has an input of that id.
   */
  leftHolds(id: string, content: string): Promise<{ runId: string; same: boolean } | null>;
  /**
   * Whether session `sessionId` holds a trace of input `id`: the input stored (pending, or
   * left on a finished run), a user message of that id (taken), or a run the input was made
   * of (`madeRun`: its idempotency key, or its id). One statement, each part an index lookup.
   */
  steered(sessionId: string, id: string, madeRun: { key: string; id: string }): Promise<boolean>;
  /**
   * Removes input `id` while no run took it (pending, or left on a finished run): a keyed start
   * that raced its key's steer takes the input from it (see steerActive). False when it is not
   * stored; a run's take of it afterwards is refused (`input_taken`).
   */
  withdraw(id: string): Promise<boolean>;
  /** Input `id` if it is left on a finished run (see `orphaned`), read whole; null otherwise. Read by its id. */
  left(id: string): Promise<RunInput | null>;
  /** Inputs no run will take: their run has finished. */
  orphaned(): Promise<RunInput[]>;
  /**
   * The ids of the inputs left on run `runId` (see `orphaned`), oldest first: none unless it
   * has finished. Their content is not read. Asked once, when the run has ended: a later call
   * may find none (the SQLite store reads only for runs that took steered input, once), and
   * what is left then is found by `orphaned`.
   */
  leftOn(runId: string): Promise<string[]>;
}
