import type { StepTrace } from "../agent/step-trace.js";
import type { RunEvent } from "../domain/run-events.js";
import type { StoredMessage } from "../domain/stored-message.js";
import type { RunChange } from "./changes.js";
import type { OwnerLimit } from "./errors.js";
import type { LastPlanEvent, StoredEvent } from "./events.js";
import type { KeyedRun, RunInputHold } from "./keyed-run.js";
import type { ClaimedRun, LeaseTerms, RunClaimQuery, RunLease } from "./leases.js";
import type { RunNotifications } from "./notifications.js";
import type { ListPage, RunPageQuery } from "./page.js";
import type { LedgerCall } from "./run-lists.js";
import type { ActiveRun, RunAccess, RunRecord } from "./runs.js";
import type { SessionAccess, SessionRecord } from "./sessions.js";
import type { InputStore } from "./store-inputs.js";
import type { QueueReads } from "./store-queue.js";
import type { WebhookOutbox } from "./store-webhooks.js";
import type { ReplyCall, ToolCallRecord, ToolCallState, ToolCallStatus } from "./tool-calls.js";

export type { RunChange, RunChangeKind } from "./changes.js";
export type { OwnerLimit } from "./errors.js";
export type { LastPlanEvent, StoredEvent } from "./events.js";
export type { KeyedRun } from "./keyed-run.js";
export type { ClaimedRun, ClaimScope, LeaseTerms, RunClaimQuery, RunLease } from "./leases.js";
export type { NotificationHandlers, RunNotifications } from "./notifications.js";
export type { ListPage, RunPageQuery } from "./page.js";
export type { InputRunSettings, RunInput } from "./queue.js";
export type { LedgerCall, ListedDelivery } from "./run-lists.js";
export type { ActiveRun, RunAccess, RunRecord } from "./runs.js";
export type { SessionAccess, SessionRecord } from "./sessions.js";
export type { WebhookOutbox } from "./store-webhooks.js";
export type { ReplyCall, ToolCallRecord, ToolCallState, ToolCallStatus } from "./tool-calls.js";
export type { ClaimQuery } from "./webhook-claims.js";
export type { AttemptOutcome, PastCapQuery, WebhookAttempt, WebhookDelivery, WebhookListing } from "./webhooks.js";

/**
 * Everything the server keeps, behind one asynchronous interface: any backend (SQLite in
 * one process today, a shared database later) implements it. Every method that touches
 * the data returns a promise, and nothing may rely on a read happening "in the same tick"
 * as anything else (`writeFailure` is this process's own memory of its last write).
 * Failures are StorageError (with a `kind`); a change the data refuses is
 * StoreConflictError (with its `rule`), and nothing of its batch is written.
 */
export interface Store {
  /**
   * Whether other processes may use the database at once (PostgreSQL): runs are then owned by
   * lease and reaped by any instance. False for a SQLite file, which one process holds.
   */
  readonly shared: boolean;
  sessions: {
    /** Refused (`owner_sessions`) when `limit` is given and its owner already has `limit.max` sessions. */
    insert(session: SessionRecord, limit?: OwnerLimit): Promise<void>;
    /** One session; with `owner` given (a key's hash, or null), only if that owner created it. */
    get(id: string, owner?: string | null): Promise<SessionRecord | null>;
    /**
     * Whose the session is, and nothing else of it (neither its system prompt nor its metadata is
     * read): what a request about the session checks first. Null when there is none.
     */
    access(id: string): Promise<SessionAccess | null>;
    /**
     * Newest first; the cursor is the last id of the previous page. At most `limit` sessions, and
     * only as many as their stored sizes fit in `bytes` (PAGE_BYTES by default; at least one):
     * the rows a page cannot hold are not read (see rowsToRead).
     */
    list(query: {
      owner: string | null;
      limit: number;
      cursor: string | null;
      bytes?: number;
    }): Promise<ListPage<SessionRecord>>;
    /**
     * Deletes the session and everything of it; false when there was none. Refused
     * (`active_run`) while a run of it is unfinished (queued or live), whatever instance stores
     * that run: a run is never deleted under its loop. A run another instance inserts meanwhile
     * is either seen (refused) or meets the deleted session (its insert refused, `session_gone`).
     */
    delete(id: string): Promise<boolean>;
    /** How many sessions `owner` (a key's hash) has. */
    countOf(owner: string): Promise<number>;
    /** Whether a stored session has the shared workspace `workspace` (its `workspace` as stored). */
    sharedWorkspaceInUse(workspace: string): Promise<boolean>;
  };
  runs: QueueReads & {
    /**
     * Inserts a new unfinished run with its first events. Refused (`active_run`) when it is
     * active (not `queued`) and its session already has an active run: this insert is the busy
     * check. Refused (`idempotency_key`) when the session has a run with the same key. With
     * `lease`, its owner holds the run's first lease (epoch 1) from the insert on. Refused
     * (`owner_runs`) when `limit` is given and its owner's sessions already have `limit.max`
     * unfinished runs. With `takesInput`, that steered input is removed in the same
     * transaction (the run is made from it), and the insert is refused (`input_taken`) when it
     * is no longer pending. With `unlessQueueHeld`, refused (`active_run`) while the session's
     * queue is held (see holdQueue): an interrupting start has the session's next run. A run
     * whose session is gone is refused `session_gone`, whatever its input or queue.
     */
    create(
      run: RunRecord,
      events: readonly RunEvent[],
      options?: { lease?: LeaseTerms; limit?: OwnerLimit; takesInput?: string; unlessQueueHeld?: boolean },
    ): Promise<StoredEvent[]>;
    get(id: string): Promise<RunRecord | null>;
    /**
     * Whose the run is and where it stands, and nothing else of it (neither its input nor its
     * session's settings are read): what a request about the run checks first. Null when none.
     */
    access(id: string): Promise<RunAccess | null>;
    /** The session's run started with idempotency key `key`, compared with `input` in the database (see KeyedRun). */
    keyed(sessionId: string, key: string, input: string): Promise<KeyedRun | null>;
    /** Run `id`'s session, and whether its input is `input`, compared in the database (the input is not read); null when none. */
    inputHolds(id: string, input: string): Promise<RunInputHold | null>;
    /** The session's active run (unfinished, not queued), if any (at most one: see `create`). */
    active(sessionId: string): Promise<ActiveRun | null>;
    /** Every active run (unfinished, not queued), oldest first. */
    unfinished(): Promise<RunRecord[]>;
    /** Those of `ids` that are unfinished and have a cancel requested (see `cancelRequested`). */
    cancelRequested(ids: readonly string[]): Promise<string[]>;
    /**
     * Counts one more holder of the session's queue, held for at least `forMs` from now: while
     * held, startQueued starts none of its runs (nor a create `unlessQueueHeld`). The hold is
     * one per session, shared by its holders on every instance: it ends when the last of them
     * is counted out (releaseQueue), or by itself at the latest end one of them asked for (a
     * holder whose process died is never counted out); a hold that has ended counts afresh.
     */
    holdQueue(sessionId: string, forMs: number): Promise<void>;
    /** Counts one holder of the session's queue out (see holdQueue): the last one frees the queue. */
    releaseQueue(sessionId: string): Promise<void>;
    /**
     * Starts the session's oldest queued run: in one transaction its status becomes `running`
     * and its `run.started` event (at `at`) is written with the deliveries it causes. Null when
     * the session has no queued run, has an active run (the one-active rule refuses it), or its
     * queue is held (see holdQueue).
     * `lease`: the starting instance holds the run from then on (see `leases`); its epoch is
     * the one returned. With `maxPerOwner`, refused (`owner_runs`) when the session's owner
     * already has that many active runs (unfinished, not queued): counted in the start's
     * transaction, one such start or limited `create` of an owner at a time (whatever the
     * instance). A session without an owner is not limited.
     */
    startQueued(
      sessionId: string,
      at: string,
      lease: LeaseTerms,
      options?: { maxPerOwner?: number },
    ): Promise<{ run: RunRecord; events: StoredEvent[]; lease: RunLease } | null>;
    /** Newest first; bounded by `limit` and `bytes` as `sessions.list` is. */
    list(query: {
      sessionId: string;
      limit: number;
      cursor: string | null;
      bytes?: number;
    }): Promise<ListPage<RunRecord>>;
  };
  /**
   * The one write of a live run: `changes` and `events` in one transaction, all or nothing,
   * with the webhook deliveries the events cause (see `webhooks`). `runs.create` writes those
   * of its events too. Returns the events as stored, for publishing. With `fence`, the batch is
   * refused (StoreConflictError `fenced`) unless that lease still holds: the run's owner and
   * epoch are still the ones it names.
   */
  commitRun(
    runId: string,
    changes: readonly RunChange[],
    events: readonly RunEvent[],
    fence?: RunLease,
  ): Promise<StoredEvent[]>;
  /**
   * Ownership of live runs, on the database's clock. An instance renews the leases it holds,
   * claims runs whose lease has expired (another instance was lost) and gives up its leases
   * when it stops, so that a peer takes the runs at once.
   */
  leases: {
    /**
     * Extends the leases `owner` holds on `runIds` (the runs it executes) by `ttlMs` from now;
     * returns those it still holds. A run that finished stays its last holder's (nobody takes
     * it over), so a renewal sent while its end was committing returns it too. A run it holds
     * but did not name is left to expire.
     */
    renew(terms: LeaseTerms & { runIds: readonly string[] }): Promise<RunLease[]>;
    /**
     * Claims up to `limit` live runs in `scope` (see ClaimScope), none of `except`, for `owner`,
     * each with its epoch bumped: the previous holder's writes are refused from then on. Runs
     * another claim is taking at the same moment are skipped, never taken twice.
     */
    claim(query: RunClaimQuery): Promise<ClaimedRun[]>;
    /** Gives up every lease `owner` holds (no owner, claimable at once); returns how many. */
    release(owner: string): Promise<number>;
  };
  /**
   * A request for a run from whichever instance took it (`cancelRequested`, a decision for a
   * call awaiting approval): `changes` committed as by commitRun, without events (the run's
   * own writer records what follows), and the instance executing the run woken (see
   * `notifications`). Refused like commitRun's changes are.
   */
  commitRequest(runId: string, changes: readonly RunChange[]): Promise<void>;
  messages: {
    /** The committed history of a session, in order: all of it, or the messages after `afterSeq`. */
    history(sessionId: string, afterSeq?: number): Promise<StoredMessage[]>;
    /**
     * Messages after `afterSeq`, in order; or, given `beforeSeq`, the messages before it, newest
     * first (`afterSeq` unused). Bounded by `limit` and `bytes` as `sessions.list` is.
     */
    page(query: {
      sessionId: string;
      afterSeq: number;
      beforeSeq?: number;
      limit: number;
      bytes?: number;
    }): Promise<ListPage<StoredMessage>>;
    /** The run's messages after `afterSeq` (default 0: all), in order. */
    ofRun(sessionId: string, runId: string, afterSeq?: number): Promise<StoredMessage[]>;
    /** Whether the run has committed a message; none is read. */
    anyOfRun(sessionId: string, runId: string): Promise<boolean>;
    /**
     * The run's answer: the text of its last assistant message when that message is final (it
     * calls no tool); null when the run's last reply called tools, was empty, or there was none.
     */
    finalAnswer(sessionId: string, runId: string): Promise<string | null>;
    /** The seq of the session's last message, 0 when it has none. */
    lastSeq(sessionId: string): Promise<number>;
    /**
     * Whether the session's user message `id` (a steered input becomes one of its id) holds
     * `content`, compared in the database (its content is not read), and its run; null when the
     * session has no user message of that id.
     */
    userMessageHolds(sessionId: string, id: string, content: string): Promise<{ runId: string; same: boolean } | null>;
  };
  events: {
    /** Events after `seq`, in order, at most `limit` of them. */
    after(runId: string, seq: number, limit?: number): Promise<StoredEvent[]>;
    /**
     * Events after `seq`, in order: at most `limit`, and only as many as their stored sizes fit
     * in `bytes` (at least one), the others not read. `more`: events follow those. With
     * `withoutUserMessages`, the `message` events of user messages are left out, unread (see events.ts).
     */
    afterWithin(
      runId: string,
      seq: number,
      page: { limit: number; bytes: number; withoutUserMessages?: boolean },
    ): Promise<{ events: StoredEvent[]; more: boolean }>;
    lastSeq(runId: string): Promise<number>;
    /** The run's events of one type, in order (a few: e.g. its approval events). */
    ofType(runId: string, type: RunEvent["type"]): Promise<StoredEvent[]>;
    /**
     * The run's events of one type, in order, each as its seq and the first `chars` characters
     * of its JSON (`head`); the rest of the JSON is not read.
     */
    headsOfType(runId: string, type: RunEvent["type"], chars: number): Promise<{ seq: number; head: string }[]>;
    /** The run's last `plan.updated` event (see lastPlanSql), its JSON if within `within` bytes; null: none. */
    lastPlan(runId: string, within: number): Promise<LastPlanEvent | null>;
  };
  toolCalls: {
    get(runId: string, id: string): Promise<ToolCallRecord | null>;
    /** The call's ledger row without its input, which is not read; null when the run has no such call. */
    status(runId: string, id: string): Promise<ToolCallStatus | null>;
    /**
     * The ids of call `id` and of the calls after it in the reply that proposed it, in order
     * (empty when the run has no such call); neither the reply nor an input is read. Replies of
     * a run proposed within the same millisecond are two replies (but see REST_OF_REPLY_SQL for
     * calls stored before migration 0017).
     */
    restOfReply(runId: string, id: string): Promise<ReplyCall[]>;
    /** The run's calls without a result yet, in order. */
    open(runId: string): Promise<ToolCallRecord[]>;
    inState(runId: string, state: ToolCallState): Promise<ToolCallRecord[]>;
    /** A page of the run's calls awaiting approval, in ledger order, each with its ordinal (the page's key; see RunPageQuery). */
    awaitingApproval(query: RunPageQuery): Promise<ListPage<LedgerCall>>;
  };
  steps: {
    /** The run's step trace of its latest turn (the others are not read); null when it has none. */
    last(runId: string): Promise<StepTrace | null>;
    /** A page of the run's step traces, by turn (the page's key; see RunPageQuery). */
    page(query: RunPageQuery): Promise<ListPage<StepTrace>>;
  };
  /**
   * Input steered into an active run, kept until the run takes it (the change `input.taken`,
   * in the commit of the user message it becomes) or it is withdrawn to start a new run.
   */
  inputs: InputStore;
  /** The webhook outbox (see WebhookOutbox). */
  webhooks: WebhookOutbox;
  /**
   * Proves the store takes writes (a full disk fails here): a write like any other, so a
   * success clears a recorded failure. Throws StorageError on failure.
   */
  probeWrites(): Promise<void>;
  /** The last write failure not yet followed by a successful write, if any. */
  writeFailure(): { at: number; message: string } | null;
  /**
   * What is wrong with the database's files that writes do not show (a SQLite file deleted or
   * replaced under the server: writes still succeed, into a file no path names), or null.
   * Absent for a backend without files of its own (PostgreSQL).
   */
  fileProblem?(): string | null;
  /**
   * Wake-ups from other instances over the same database (commits of events, control
   * requests); null for a backend only one process uses (SQLite).
   */
  notifications: RunNotifications | null;
  close(): Promise<void>;
}
