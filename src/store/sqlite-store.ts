import { applyRunChange } from "./apply-change.js";
import { Checkpointer, WAL_RESTART_FRAMES } from "./checkpointer.js";
import { type Db, openDatabase } from "./database.js";
import { ownerRunsFull, ownerSessionsFull, queueHeld, StorageError, StoreConflictError } from "./errors.js";
import { GROUP_COMMIT_WINDOW_MS, GroupCommit } from "./group-commit.js";
import { MayHaveRows } from "./may-have-rows.js";
import { translateSqliteError } from "./sqlite-errors.js";
import { fileProblemOf } from "./sqlite-file-identity.js";
import { startQueuedIn } from "./sqlite-start-queued.js";
import type { OpenSqliteStoreOptions, SqliteStoreOptions } from "./sqlite-store-options.js";
import { sqliteTables } from "./sqlite-tables.js";
import { sqliteWriteProbe } from "./sqlite-write-probe.js";
import { StorageHealth } from "./storage-health.js";
import type { Store, StoredEvent } from "./store.js";
import { targetOfRun } from "./webhook-targets.js";

export type { OpenSqliteStoreOptions, SqliteStoreOptions };

/** Rows of events deleted in one piece of a session's delete (a few ms of work). */
const DELETE_PIECE_ROWS = 2000;

/**
 * The Store over one SQLite connection (better-sqlite3, synchronous). A read is done at once
 * and returns a settled promise; it sees what is committed (a write once its promise
 * settled). Writes wait (at most `groupCommitMs`) to share one transaction with the others
 * made meanwhile, runs' batches and every other write alike (see GroupCommit): they take
 * effect in the order they were made, and each settles as it would have alone. A group is
 * applied inside one synchronous `db.transaction()`, so no transaction is ever held across
 * an await. In the tables' statements a parameter of a query with ORDER BY, LIMIT, min() or
 * max() is written `+?`: SQLite (built with STAT4) would otherwise re-plan the statement at
 * every call, as the bound value might change the plan; `+?` is the same value in an
 * expression it does not look into.
 */
export function createSqliteStore(db: Db, options: SqliteStoreOptions = {}): Store {
  return sqliteStoreOf(db, options).store;
}

/** The Store over `db`, and the hold of its writes (see GroupCommit.hold). */
function sqliteStoreOf(db: Db, options: SqliteStoreOptions): { store: Store; holdWrites: () => () => void } {
  const health = new StorageHealth();
  const tables = sqliteTables(db);
  // One transaction wrapper, reused: building it costs as much as a small commit.
  const inTransaction = db.transaction((fn: () => unknown) => fn());
  // Most runs end with no run queued behind them and take no steered input: no read says so.
  // One process uses the file (its lock), so a queue hold left in it is a dead process's start's.
  tables.queue.releaseAll();
  const queuedSessions = new MayHaveRows(tables.queue.sessions());
  const inputRuns = new MayHaveRows(tables.queue.runsWithInput());
  // Finished runs that may have left input (found by leftOn): a run's end reads none otherwise.
  const leftInputRuns = new MayHaveRows([]);
  const probe = sqliteWriteProbe(db);

  /**
   * A write in one transaction: a success clears a recorded failure, a storage failure is
   * recorded. Once the store is closed, refused (`unavailable`).
   */
  const writeAlone = <T>(fn: () => T): Promise<T> => {
    if (!db.open) return Promise.reject(new StorageError("unavailable", "the store is closed"));
    try {
      const result = inTransaction(fn) as T;
      health.recordSuccess();
      return Promise.resolve(result);
    } catch (err) {
      const translated = translateSqliteError(err);
      if (translated instanceof StorageError) health.recordFailure(translated);
      return Promise.reject(translated);
    }
  };
  const deletePieceRows = options.deletePieceRows ?? DELETE_PIECE_ROWS;
  const group = new GroupCommit<() => unknown>({
    windowMs: options.groupCommitMs ?? GROUP_COMMIT_WINDOW_MS,
    commitGroup: (works) => writeAlone(() => works.map((work) => work())),
    commitAlone: writeAlone,
  });
  /** A read of what is committed (not of a group still waiting): its errors translated, nothing recorded. */
  const read = <T>(fn: () => T): Promise<T> => {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(translateSqliteError(err));
    }
  };
  /** A write, applied after every write made before it, in the next group's transaction. */
  const write = <T>(fn: () => T): Promise<T> => group.add<T>(fn);

  const store: Store = {
    shared: false,
    sessions: {
      // One writer at a time holds the file: the count and the insert are one transaction.
      insert: (session, limit) =>
        write(() => {
          if (limit && tables.sessions.countOf(limit.owner) >= limit.max) throw ownerSessionsFull(limit);
          tables.sessions.insert(session);
        }),
      get: (id, owner) => read(() => tables.sessions.get(id, owner)),
      access: (id) => read(() => tables.sessions.access(id)),
      list: (query) => read(() => tables.sessions.list(query)),
      // A piece at a time, each in a group's transaction of its own, so a session of any number
      // of events holds the event loop no longer than one piece (a run's messages go with it;
      // one transaction of 100,000 events and 20,000 messages held it 165-196 ms, its pieces at
      // most 13 ms); the session row goes last. Each piece, ordered after the commits already
      // waiting, refuses a session with an unfinished run: no piece goes after one appears.
      delete: async (id) => {
        while (await write(() => tables.sessions.deletePiece(id, deletePieceRows)));
        const deleted = await write(() => {
          tables.leases.forget();
          return tables.sessions.delete(id);
        });
        queuedSessions.forget(id);
        return deleted;
      },
      countOf: (owner) => read(() => tables.sessions.countOf(owner)),
      sharedWorkspaceInUse: (workspace) => read(() => tables.sessions.sharedWorkspaceInUse(workspace)),
    },
    runs: {
      create: (run, events, { lease, limit, takesInput, unlessQueueHeld } = {}) =>
        queuedSessions.adding(run.status === "queued" ? run.sessionId : null, () =>
          write(() => {
            if (unlessQueueHeld && tables.queue.held(run.sessionId)) throw queueHeld(run.sessionId);
            if (limit && tables.runs.unfinishedOf(limit.owner) >= limit.max) throw ownerRunsFull(limit);
            // The run before the input it takes: for a deleted session (whose delete took its
            // inputs) the insert is refused `session_gone`, as over PostgreSQL.
            tables.runs.insert(run);
            if (takesInput !== undefined && !tables.queue.withdraw(takesInput)) {
              throw new StoreConflictError("input_taken", `input ${takesInput} is no longer pending`);
            }
            if (lease) tables.leases.take(run.id, lease);
            tables.webhooks.deriveFrom(events, { runId: run.id, target: targetOfRun(run) });
            return tables.events.insert(events);
          }),
        ),
      get: (id) => read(() => tables.runs.get(id)),
      access: (id) => read(() => tables.runs.access(id)),
      keyed: (sessionId, key, input) => read(() => tables.runInputs.keyed(sessionId, key, input)),
      inputHolds: (id, input) => read(() => tables.runInputs.inputHolds(id, input)),
      active: (sessionId) => read(() => tables.runs.active(sessionId)),
      unfinished: () => read(() => tables.runs.live()),
      cancelRequested: (ids) => read(() => tables.runs.cancelRequested(ids)),
      list: (query) => read(() => tables.runs.list(query)),
      anyQueued: (sessionId) =>
        read(() => queuedSessions.rows(sessionId, () => (tables.queue.anyQueued(sessionId) ? [true] : [])).length > 0),
      queuedIds: (sessionId) => read(() => queuedSessions.rows(sessionId, () => tables.queue.queuedIds(sessionId))),
      queuedSessions: () => read(() => tables.queue.sessions()),
      holdQueue: (sessionId, forMs) => write(() => tables.queue.hold(sessionId, forMs)),
      releaseQueue: (sessionId) => write(() => tables.queue.release(sessionId)),
      startQueued: (sessionId, at, terms, { maxPerOwner } = {}) =>
        write(() => startQueuedIn(tables, { sessionId, at, terms, maxPerOwner })),
    },
    commitRun: (runId, changes, events, fence) => {
      const committed = write<StoredEvent[]>(() => {
        if (fence && !tables.leases.holds(fence)) {
          throw new StoreConflictError(
            "fenced",
            `run ${runId} is no longer held by ${fence.owner} at epoch ${fence.epoch}`,
          );
        }
        for (const change of changes) applyRunChange(tables, runId, change);
        // The outbox rows of these events, in their transaction: a crash loses none.
        tables.webhooks.deriveFrom(events);
        return tables.events.insert(events);
      });
      // A finished run asks for no steered input: what it left is found by inputs.leftOn (or orphaned).
      if (!changes.some((change) => change.kind === "finish")) return committed;
      return committed.then((stored) => {
        if (inputRuns.forget(runId)) leftInputRuns.mark(runId);
        return stored;
      });
    },
    commitRequest: (runId, changes) =>
      write(() => {
        for (const change of changes) applyRunChange(tables, runId, change);
      }),
    messages: {
      history: (sessionId, afterSeq) => read(() => tables.messages.history(sessionId, afterSeq)),
      page: (query) => read(() => tables.messages.page(query)),
      ofRun: (sessionId, runId, afterSeq) => read(() => tables.messages.ofRun(sessionId, runId, afterSeq)),
      anyOfRun: (sessionId, runId) => read(() => tables.messages.anyOfRun(sessionId, runId)),
      finalAnswer: (sessionId, runId) => read(() => tables.messages.finalAnswer(sessionId, runId)),
      lastSeq: (sessionId) => read(() => tables.messages.lastSeq(sessionId)),
      userMessageHolds: (sessionId, id, content) =>
        read(() => tables.messages.userMessageHolds(sessionId, id, content)),
    },
    events: {
      after: (runId, seq, limit) => read(() => tables.events.after(runId, seq, limit)),
      afterWithin: (runId, seq, page) => read(() => tables.events.afterWithin(runId, seq, page)),
      lastSeq: (runId) => read(() => tables.events.lastSeq(runId)),
      ofType: (runId, type) => read(() => tables.events.ofType(runId, type)),
      headsOfType: (runId, type, chars) => read(() => tables.events.headsOfType(runId, type, chars)),
      lastPlan: (runId, within) => read(() => tables.events.lastPlan(runId, within)),
    },
    toolCalls: {
      get: (runId, id) => read(() => tables.toolCalls.get(runId, id)),
      status: (runId, id) => read(() => tables.toolCalls.status(runId, id)),
      restOfReply: (runId, id) => read(() => tables.toolCalls.restOfReply(runId, id)),
      open: (runId) => read(() => tables.toolCalls.open(runId)),
      inState: (runId, state) => read(() => tables.toolCalls.inState(runId, state)),
      awaitingApproval: (query) => read(() => tables.runLists.awaitingApproval(query)),
    },
    steps: {
      last: (runId) => read(() => tables.steps.last(runId)),
      page: (query) => read(() => tables.runLists.steps(query)),
    },
    inputs: {
      add: (input, options) =>
        inputRuns.adding(input.runId, () => write(() => tables.queue.addInput(input, options?.max))),
      pending: (runId) => read(() => inputRuns.rows(runId, () => tables.queue.pending(runId))),
      pendingStatus: (runId, id) => read(() => tables.queue.pendingStatus(runId, id)),
      pendingHolds: (runId, id, content) => read(() => tables.queue.pendingHolds(runId, id, content)),
      leftHolds: (id, content) => read(() => tables.queue.leftHolds(id, content)),
      steered: (sessionId, id, madeRun) => read(() => tables.queue.steered(sessionId, id, madeRun)),
      left: (id) => read(() => tables.queue.left(id)),
      withdraw: (id) => write(() => tables.queue.withdraw(id)),
      orphaned: () => read(() => tables.queue.orphaned()),
      // Asked once, at the run's end (input not queued then is found by orphaned at the next start).
      leftOn: (runId) => read(() => leftInputRuns.lastRows(runId, () => tables.queue.leftOn(runId))),
    },
    webhooks: {
      claim: (query) => write(() => tables.webhooks.claim(query)),
      record: (outcome) => write(() => tables.webhooks.record(outcome)),
      release: (query) => write(() => tables.webhooks.release(query)),
      postpone: (query) => write(() => tables.webhooks.postpone(query)),
      expire: (query) => write(() => tables.webhooks.expire(query)),
      page: (query) => read(() => tables.runLists.deliveries(query)),
      nextDue: () => read(() => tables.webhooks.nextDue()),
      targetOf: (runId) => read(() => tables.webhooks.targetOf(runId)),
      giveUpPastCap: (query) => write(() => tables.webhooks.giveUpPastCap(query)),
    },
    leases: {
      renew: (terms) => write(() => tables.leases.renew(terms)),
      claim: (query) => write(() => tables.leases.claim(query)),
      release: (owner) => write(() => tables.leases.release(owner)),
    },
    probeWrites: () => write(probe),
    writeFailure: () => health.failure,
    // One process holds the file: there is nobody to hear from.
    notifications: null,
    // The writes made before it settle first (a refused group's, run again alone); a later one is refused.
    close: async () => {
      await group.flush(true);
      await read(() => db.close());
    },
  };
  return { store, holdWrites: () => group.hold() };
}

/**
 * Opens the SQLite file (see openDatabase) and returns the Store over it. A file's WAL is
 * checkpointed by a worker thread (see Checkpointer), never inside a commit: the connection's
 * automatic checkpoint is off. The WAL is restarted from its beginning once it holds
 * `walRestartFrames` frames, even under writes that never pause, and its file is then cut back
 * to twice that: the WAL stays bounded as long as the disk copies frames faster than commits
 * add them.
 */
export function openSqliteStore(options: OpenSqliteStoreOptions): Store {
  const {
    onCheckpoint,
    onCheckpointError,
    checkpointIntervalMs,
    groupCommitMs,
    walRestartFrames = WAL_RESTART_FRAMES,
    onWalRestart,
    onFileProblem,
    ...open
  } = options;
  const db = openDatabase(open);
  const { store, holdWrites } = sqliteStoreOf(db, { groupCommitMs });
  if (open.path === ":memory:") return store;
  const fileProblem = fileProblemOf(open.path, onFileProblem);
  db.pragma("wal_autocheckpoint = 0");
  // A restarted WAL's file is cut back to twice the restart size (a frame is a page and its
  // 24-byte header): what the next cycle fills again is not given back and regrown each time.
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  db.pragma(`journal_size_limit = ${32 + 2 * walRestartFrames * (pageSize + 24)}`);
  const checkpointer = new Checkpointer({
    path: open.path,
    intervalMs: checkpointIntervalMs,
    onCheckpoint,
    onError: onCheckpointError,
    onLost: () => {
      // Without the worker the WAL would only grow: SQLite checkpoints inside commits again.
      if (db.open) db.pragma("wal_autocheckpoint = 10000");
      onCheckpointError?.("the checkpoint worker stopped; checkpoints run inside commits again");
    },
    restartFrames: walRestartFrames,
    holdWrites,
    onRestart: onWalRestart,
  });
  return {
    ...store,
    fileProblem,
    // The worker's connection first; the last one to close checkpoints what is left.
    close: async () => {
      await checkpointer.close();
      await store.close();
    },
  };
}
