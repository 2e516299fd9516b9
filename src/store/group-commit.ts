/** A write waiting for its group's transaction. */
interface PendingWrite {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** A group this large is committed at once rather than at its due time. */
const MAX_GROUP = 512;

export interface GroupCommitOptions {
  /**
   * At most one group transaction per this many ms: a write queued within that time of the
   * last group waits for the next one (commits at a high rate share transactions); a write
   * queued later goes at the end of the current turn of the event loop. 0: every group at the
   * end of its turn.
   */
  windowMs: number;
  /** Runs `fn` inside one transaction, synchronously; throws when the transaction failed. */
  inTransaction: (fn: () => unknown) => unknown;
  /** Runs one write alone, in its own transaction, as the store's other writes do. */
  writeAlone: (work: () => unknown) => Promise<unknown>;
  /** Told after a group committed. */
  onCommitted: () => void;
}

/**
 * Group commit for one synchronous SQLite connection: writes queued with `add` are applied
 * together in one transaction (each write's statements in the order queued), which saves
 * each of them its own BEGIN, COMMIT, locks and WAL header. A write's promise settles only
 * after its group is committed, so what it stores is in the database before its caller
 * publishes anything. If the group fails (one of its writes throws, or the commit does),
 * nothing of it is kept and each write runs again alone: each settles as it would have
 * without grouping. A write's `work` must touch nothing but the database, since it may run
 * twice. `flush` commits the waiting group at once: the store calls it before any other
 * write, so writes take effect in the order they were made.
 */
export class GroupCommit {
  #pending: PendingWrite[] = [];
  #timer: NodeJS.Timeout | null = null;
  #immediate: NodeJS.Immediate | null = null;
  #lastGroupAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: GroupCommitOptions) {}

  add<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.#pending.length >= MAX_GROUP) this.flush();
      else this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#timer || this.#immediate) return;
    const wait = this.#lastGroupAt + this.options.windowMs - performance.now();
    if (wait > 0) this.#timer = setTimeout(() => this.flush(), wait);
    else this.#immediate = setImmediate(() => this.flush());
  }

  /** Commits what is waiting, now (synchronously); the writes' promises settle after. */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#immediate) clearImmediate(this.#immediate);
    this.#timer = null;
    this.#immediate = null;
    const group = this.#pending;
    if (!group.length) return;
    this.#pending = [];
    this.#lastGroupAt = performance.now();
    if (group.length === 1) {
      const [only] = group as [PendingWrite];
      this.options.writeAlone(only.work).then(only.resolve, only.reject);
      return;
    }
    let results: unknown[];
    try {
      results = this.options.inTransaction(() => group.map((write) => write.work())) as unknown[];
    } catch {
      for (const write of group) this.options.writeAlone(write.work).then(write.resolve, write.reject);
      return;
    }
    this.options.onCommitted();
    group.forEach((write, i) => {
      write.resolve(results[i]);
    });
  }
}
