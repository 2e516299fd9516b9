/**
 * A value kept on an object, under a symbol of this slot's own: a cache that lives exactly as
 * long as its object. Use it instead of a WeakMap for objects that die young (events, event
 * batches, messages): V8's young-generation collections keep every value of a WeakMap alive
 * while its key is young, whether or not the key is still reachable, so each such value (and
 * all it holds) is moved to the old generation and freed only by a full collection.
 *
 * The property is not enumerable, so JSON, object spreads and deep equality do not see it.
 * An object that cannot take new properties (frozen, sealed) simply gets nothing kept.
 */
export class ObjectSlot<K extends object, V> {
  readonly #key: symbol;

  constructor(name: string) {
    this.#key = Symbol(name);
  }

  get(target: K): V | undefined {
    return (target as Record<symbol, V | undefined>)[this.#key];
  }

  set(target: K, value: V): void {
    if (Object.hasOwn(target, this.#key)) {
      (target as Record<symbol, V>)[this.#key] = value;
    } else if (Object.isExtensible(target)) {
      Object.defineProperty(target, this.#key, { value, writable: true, configurable: true, enumerable: false });
    }
  }
}
