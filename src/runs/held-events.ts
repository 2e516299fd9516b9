import type { StoredEvent } from "../store/store.js";

/**
 * The most live events (and bytes of their data) held for one watcher that is not reading.
 * Past either, the held events are dropped and the watcher reads on from the database
 * instead (every published event is already stored), so a stalled watcher costs bounded memory.
 */
export const MAX_HELD_EVENTS = 2000;
export const MAX_HELD_BYTES = 1 << 20;

/**
 * Live events held for one watcher until it takes them, in the order published: a FIFO,
 * amortised O(1) at both ends (Array#shift is O(n) on long arrays). Bounded: past
 * MAX_HELD_EVENTS or MAX_HELD_BYTES it drops what it holds and holds nothing more (it has
 * `overflowed`) until `resume`, once the watcher has read on from the database.
 */
export class HeldEvents {
  #items: StoredEvent[] = [];
  #head = 0;
  #bytes = 0;
  #overflowed = false;

  get size(): number {
    return this.#items.length - this.#head;
  }

  /** Events were dropped since the last `resume`: what follows what was taken is in the database. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  hold(event: StoredEvent): void {
    if (this.#overflowed) return;
    this.#items.push(event);
    this.#bytes += event.data.length;
    if (this.size > MAX_HELD_EVENTS || this.#bytes > MAX_HELD_BYTES) {
      this.clear();
      this.#overflowed = true;
    }
  }

  /** The oldest event held, taken; undefined when none is. */
  shift(): StoredEvent | undefined {
    if (this.#head === this.#items.length) return undefined;
    const event = this.#items[this.#head++] as StoredEvent;
    this.#bytes -= event.data.length;
    if (this.#head === this.#items.length) this.clear();
    else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return event;
  }

  /** Every event held, in order, taken (the overflow mark stays). */
  takeAll(): StoredEvent[] {
    const events = this.#head === 0 ? this.#items : this.#items.slice(this.#head);
    this.clear();
    return events;
  }

  /** Holds again after an overflow. */
  resume(): void {
    this.#overflowed = false;
  }

  /** Drops what is held (the overflow mark stays). */
  clear(): void {
    this.#items = [];
    this.#head = 0;
    this.#bytes = 0;
  }
}
