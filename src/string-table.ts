/**
 * Values by string key, for the long-lived tables whose entries come and go with each run,
 * stream or request (live runs by id, their watchers, their pending work): use it instead of
 * a `Map` (or a `Set`, with `true` as the value) there.
 *
 * Why: when V8 grows, shrinks or compacts a Map's or a Set's hash table, the table it leaves
 * keeps a pointer to its successor and to every entry it held (for iterators still walking
 * it). Once a table of a long-lived Map has been moved to the old generation, that chain
 * makes every later table, and every value any of them held, look alive to each young
 * collection until the next full one: the runs a registry let go of are copied and promoted
 * with all they reference, again and again. A dictionary-mode object (`Object.create(null)`)
 * drops its old table when it grows, so an entry deleted here is garbage at the next young
 * collection. (`bench/table-churn.mjs` measures both.)
 *
 * Keys iterate in insertion order, as a Map's do, provided none is an array index ("42"): the
 * ids this server makes never are. Listing the keys or values costs a pass over all of them;
 * a table that must find its oldest entry often (an LRU cache) is better kept as a Map.
 */
export class StringTable<V> {
  #entries: Record<string, V> = Object.create(null);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(key: string): V | undefined {
    return this.#entries[key];
  }

  has(key: string): boolean {
    return key in this.#entries;
  }

  set(key: string, value: V): this {
    if (!(key in this.#entries)) this.#size++;
    this.#entries[key] = value;
    return this;
  }

  /** Whether `key` was there. */
  delete(key: string): boolean {
    if (!(key in this.#entries)) return false;
    delete this.#entries[key];
    this.#size--;
    return true;
  }

  clear(): void {
    this.#entries = Object.create(null);
    this.#size = 0;
  }

  /** A copy of the keys: the table may change while the caller walks it. */
  keys(): string[] {
    return this.#size === 0 ? [] : Object.keys(this.#entries);
  }

  /** A copy of the values, in the keys' order. */
  values(): V[] {
    const values: V[] = [];
    if (this.#size === 0) return values;
    // Faster than Object.values on a dictionary-mode object (~3x with 10,000 entries).
    const entries = this.#entries;
    for (const key in entries) values.push(entries[key] as V);
    return values;
  }
}
