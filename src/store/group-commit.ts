import { StorageError } from "./errors.js";

/** A write waiting for its group's transaction. */
interface PendingWrite<W> {
  work: W;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** How often, at most, grouped writes share one transaction, by default. */
export const GROUP_COMMIT_WINDOW_MS = 2;

/** A group this large is committed at once rather than at its due time. */
const MAX_GROUP = 512;

export interface GroupCommitOptions<W> {
  /**
   * At most one group transaction per this many ms while writes come from several writers at
   * once: a write queued within that time of the last group, when that group held more than
   * one write, waits for the next one (commits at a high rate share transactions). A write
   * queued later, or after a group of one (a lone writer, which has nobody to share with),
   * goes at the end of the current turn of the event loop. 0: every group at the end of its turn.
   */
  windowMs: number;
  /**
   * Applies every write of a group in one transaction, in order, all or nothing; resolves with
   * each write's result once committed, rejects when the transaction failed.
   */
  commitGroup: (works: W[]) => Promise<unknown[]>;
  /** Runs one write alone, in its own transaction, as the store's other writes do. */
  commitAlone: (work: W) => Promise<unknown>;
}

/**
 * Group commit: writes queued with `add` are applied together in one transaction, which
 * saves each of them its own BEGIN, COMMIT, locks, WAL header (and, on a server, round trip
 * and log flush). A write's promise settles only after its group is committed, so what it
 * stores is in the database before its caller publishes anything. If the group fails (one of
 * its writes is refused or throws, or the commit fails), nothing of it is kept and each write
 * runs again alone: each settles as it would have without grouping, so a write must change
 * nothing but the database, since it may be applied twice. A group whose outcome is unknown
 * (StorageError.outcomeUnknown: its COMMIT sent, the answer lost) may be stored: each write
 * is rejected with that error, as a lone write would be, and none runs again. `flush` sends the waiting group at
 * once. `hold` keeps every write not yet sent waiting until its release: a pause in the writes
 * that does not block the event loop. (With a synchronous `commitGroup`, as SQLite's, nothing
 * is committed during a hold; an asynchronous one may still be committing a group sent before.)
 */
export class GroupCommit<W> {
  #pending: PendingWrite<W>[] = [];
  #timer: NodeJS.Timeout | null = null;
  #immediate: NodeJS.Immediate | null = null;
  #lastGroupAt = Number.NEGATIVE_INFINITY;
  #lastGroupSize = 0;
  #holds = 0;

  constructor(private readonly options: GroupCommitOptions<W>) {}

  add<T>(work: W): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.#holds > 0) return;
      if (this.#pending.length >= MAX_GROUP) this.flush();
      else this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#timer || this.#immediate) return;
    const wait = this.#lastGroupSize > 1 ? this.#lastGroupAt + this.options.windowMs - performance.now() : 0;
    if (wait > 0) this.#timer = setTimeout(() => this.flush(), wait);
    else this.#immediate = setImmediate(() => this.flush());
  }

  /**
   * Holds every write, queued or to come, until the returned release is called (once; later
   * calls do nothing): then what waits goes in the next group. Holds nest.
   */
  hold(): () => void {
    this.#holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds--;
      if (this.#holds > 0 || this.#pending.length === 0) return;
      if (this.#pending.length >= MAX_GROUP) this.flush();
      else this.#schedule();
    };
  }

  /**
   * Sends what is waiting, now (a synchronous store has committed it on return, unless it was
   * refused); the writes' promises settle after. The returned promise resolves (never rejects)
   * once each write sent has settled: a refused group's writes have run again alone, which a
   * store closing waits for before it closes its connection. Held writes wait, unless
   * `evenHeld` (the store is closing).
   */
  flush(evenHeld = false): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#immediate) clearImmediate(this.#immediate);
    this.#timer = null;
    this.#immediate = null;
    if (this.#holds > 0 && !evenHeld) return Promise.resolve();
    const group = this.#pending;
    if (!group.length) return Promise.resolve();
    this.#pending = [];
    this.#lastGroupAt = performance.now();
    this.#lastGroupSize = group.length;
    const alone = (write: PendingWrite<W>) => this.options.commitAlone(write.work).then(write.resolve, write.reject);
    if (group.length === 1) return alone(group[0] as PendingWrite<W>);
    return this.options.commitGroup(group.map((write) => write.work)).then(
      (results) => {
        group.forEach((write, i) => {
          write.resolve(results[i]);
        });
      },
      async (err) => {
        // Committed or not, nobody knows (its COMMIT was sent, the answer lost): each write is
        // told so, none is written again (a write stored already would fail as a duplicate).
        if (err instanceof StorageError && err.outcomeUnknown) {
          for (const write of group) write.reject(err);
          return;
        }
        await Promise.all(group.map(alone));
      },
    );
  }
}
