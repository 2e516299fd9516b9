/**
 * What can go wrong with storage, whatever the backend: `full` (no space), `busy` (locked by
 * another writer), `readonly`, `denied` (the server's database role or file access lacks a
 * permission, or its credentials are refused), `corrupt`, `io`, `unavailable` (cannot be
 * opened or reached).
 */
export type StorageErrorKind = "full" | "busy" | "readonly" | "denied" | "corrupt" | "io" | "unavailable";

/** A storage failure, crossing the store's boundary with a kind instead of a backend's code. */
export class StorageError extends Error {
  readonly code = "STORAGE_FAILED";
  /**
   * A write that failed this way may have been stored all the same (its COMMIT was sent, and
   * its answer never came: the connection broke, or the answer was later than the query
   * timeout). Only what is read back says.
   */
  readonly outcomeUnknown: boolean;
  constructor(
    readonly kind: StorageErrorKind,
    message: string,
    options?: { cause?: unknown; outcomeUnknown?: boolean },
  ) {
    super(message, options);
    this.name = "StorageError";
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
  }
}

/**
 * Which rule a refused change broke: `active_run` (the session already has an unfinished
 * run; for a session's delete, any unfinished run), `idempotency_key` (a run with this key
 * exists), `decided` (the tool call was already decided, or is past deciding; or a result
 * closing it `undecided` found a decision: see RunChange), `run_not_live`
 * (the run has finished or is gone, or is not in the status a change requires), `input_taken` (steered input no longer pending), `fenced`
 * (the writer's lease on the run no longer holds: another instance has claimed it),
 * `owner_sessions` / `owner_runs` (the owner already has its maximum of sessions, or of
 * unfinished runs; see OwnerLimit), `session_gone` (a run's session was deleted before the
 * run was stored, by another request or instance), `cancel_requested` (an end other than
 * `aborted` for a run whose cancel was requested: the run ends aborted), `inputs_full` (the run
 * already has its maximum of pending steered inputs), `call_closed` (the tool call has its
 * result already, or is not in the ledger: a closed call never changes again, and gets no second result),
 * `approval_expired` (an approval decided later than the approval timeout after its request: the
 * timeout denies the call, fail closed).
 */
export type ConflictRule =
  | "active_run"
  | "idempotency_key"
  | "decided"
  | "run_not_live"
  | "fenced"
  | "owner_sessions"
  | "owner_runs"
  | "input_taken"
  | "session_gone"
  | "cancel_requested"
  | "inputs_full"
  | "call_closed"
  | "approval_expired";

/**
 * At most `max` of something per owner (an API key's hash), counted in the transaction of the
 * insert that would pass it, one such insert of an owner at a time (whatever the instance).
 */
export interface OwnerLimit {
  owner: string;
  max: number;
}

/** A change the data refused (a rule of the schema); nothing of its batch was written. */
export class StoreConflictError extends Error {
  readonly code = "STORE_CONFLICT";
  constructor(
    readonly rule: ConflictRule,
    message: string,
  ) {
    super(message);
    this.name = "StoreConflictError";
  }
}

/** A change to a tool call that has its result already (or is not in the ledger): see ConflictRule. */
/** A change refused because the run's cancel was requested: it ends `aborted`, nothing more of it runs. */
export const cancelRequested = (runId: string): StoreConflictError =>
  new StoreConflictError("cancel_requested", `run ${runId} was cancelled: it ends aborted`);

export const callClosed = (runId: string, toolCallId: string): StoreConflictError =>
  new StoreConflictError(
    "call_closed",
    `tool call ${toolCallId} of run ${runId} has its result already, or is not in the ledger`,
  );
/** An approval of call `toolCallId` decided after its request's approval timeout (see RunChange `toolCall.decided`). */
export const approvalExpired = (toolCallId: string): StoreConflictError =>
  new StoreConflictError("approval_expired", `the approval of tool call ${toolCallId} has timed out: it is denied`);
/** A call closed `undecided` (see RunChange `message`) that the ledger holds a decision for. */
export const decidedMeanwhile = (toolCallId: string): StoreConflictError =>
  new StoreConflictError("decided", `tool call ${toolCallId} was decided meanwhile`);
export const sessionHasRuns = (sessionId: string): StoreConflictError =>
  new StoreConflictError("active_run", `session ${sessionId} has an unfinished run`);
/** The session's queue is held by an interrupting start, whose run comes next (see holdQueue). */
export const queueHeld = (sessionId: string): StoreConflictError =>
  new StoreConflictError("active_run", `the queue of session ${sessionId} is held`);
export const ownerSessionsFull = (limit: OwnerLimit): StoreConflictError =>
  new StoreConflictError("owner_sessions", `the owner already has ${limit.max} sessions`);
export const ownerRunsFull = (limit: OwnerLimit): StoreConflictError =>
  new StoreConflictError("owner_runs", `the owner already has ${limit.max} unfinished runs`);

export const inputsFull = (max: number): StoreConflictError =>
  new StoreConflictError("inputs_full", `the run already has ${max} pending inputs`);

export const isStorageError = (err: unknown): err is StorageError => err instanceof StorageError;
export const isConflict = (err: unknown, rule?: ConflictRule): err is StoreConflictError =>
  err instanceof StoreConflictError && (rule === undefined || err.rule === rule);
