import { StringTable } from "./string-table.js";

interface Entry<V> {
  readonly key: string;
  value: V;
  cost: number;
  /** Neighbours in recency order (older, newer); both null once the entry is out. */
  older: Entry<V> | null;
  newer: Entry<V> | null;
}

/**
 * Values by string key, bounded by the sum of their costs: past the bound the least recently
 * used go first. For long-lived caches of sessions and the like, whose entries come and go
 * with the traffic: kept in a StringTable (see string-table.ts) with a list in recency order
 * whose entries are unlinked when they leave, so that nothing left behind keeps a dropped
 * value, or any entry after it, alive through young collections.
 */
export class LruTable<V> {
  readonly #entries = new StringTable<Entry<V>>();
  #oldest: Entry<V> | null = null;
  #newest: Entry<V> | null = null;
  #cost = 0;

  constructor(private readonly maxCost: number) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The sum of the kept values' costs. */
  get cost(): number {
    return this.#cost;
  }

  /** The value of `key`, which becomes the most recently used. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#unlink(entry);
    this.#append(entry);
    return entry.value;
  }

  /** The value of `key`, its recency unchanged. */
  peek(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  /**
   * Keeps `value` under `key` as the most recently used, then drops the least recently used
   * while the costs are over the bound. A value costing more than the whole bound is not kept
   * (nor is what `key` held before).
   */
  set(key: string, value: V, cost: number): void {
    this.delete(key);
    if (cost > this.maxCost) return;
    const entry: Entry<V> = { key, value, cost, older: null, newer: null };
    this.#entries.set(key, entry);
    this.#append(entry);
    this.#cost += cost;
    while (this.#cost > this.maxCost && this.#oldest !== null) this.delete(this.#oldest.key);
  }

  /** Whether `key` was kept. */
  delete(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#entries.delete(key);
    this.#unlink(entry);
    this.#cost -= entry.cost;
    return true;
  }

  #append(entry: Entry<V>): void {
    entry.older = this.#newest;
    if (this.#newest === null) this.#oldest = entry;
    else this.#newest.newer = entry;
    this.#newest = entry;
  }

  #unlink(entry: Entry<V>): void {
    if (entry.older === null) this.#oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === null) this.#newest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = null;
    entry.newer = null;
  }
}
