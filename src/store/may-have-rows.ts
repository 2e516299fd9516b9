/**
 * Which keys (a run, a session) may have rows of one kind, for a database this process alone
 * writes (SQLite, whose file one process owns: see takeOwnerLock). A key may have rows when
 * some were found for it when the store opened, or a write that may add some was made for it
 * since; any other key has none, and a read of its rows is skipped. A key is forgotten again
 * when a read finds none while no such write is unsettled (a settled write's rows are read),
 * or when it is not asked about any more (`forget`).
 */
export class MayHaveRows {
  /** The keys that may have rows, each with the writes that may add some not yet settled. */
  readonly #keys = new Map<string, number>();

  constructor(atOpen: Iterable<string>) {
    for (const key of atOpen) this.#keys.set(key, 0);
  }

  /** `write`, which may add rows for `key` (none for null): the key may have rows from now on. */
  adding<T>(key: string | null, write: () => Promise<T>): Promise<T> {
    if (key === null) return write();
    this.#keys.set(key, (this.#keys.get(key) ?? 0) + 1);
    return write().finally(() => {
      const unsettled = this.#keys.get(key);
      if (unsettled !== undefined) this.#keys.set(key, unsettled - 1);
    });
  }

  /** The rows of `key` as `read` finds them (a synchronous read); none, unread, when it can have none. */
  rows<T>(key: string, read: () => T[]): T[] {
    if (!this.#keys.has(key)) return [];
    const rows = read();
    if (rows.length === 0 && this.#keys.get(key) === 0) this.#keys.delete(key);
    return rows;
  }

  /** The rows of `key` as `rows` finds them, for the last time: the key is dropped (see forget). */
  lastRows<T>(key: string, read: () => T[]): T[] {
    const rows = this.rows(key, read);
    this.#keys.delete(key);
    return rows;
  }

  /** Drops `key`, which is not asked about again (its run finished, its session was deleted): whether it was kept. */
  forget(key: string): boolean {
    return this.#keys.delete(key);
  }

  /** `key` may have rows from now on (rows another kind of key had, handed over to it). */
  mark(key: string): void {
    if (!this.#keys.has(key)) this.#keys.set(key, 0);
  }

  /** How many keys are kept: those that may have rows and are still asked about. */
  get size(): number {
    return this.#keys.size;
  }
}
