import type { StoredEvent } from "../store/store.js";
import type { EventHub } from "./event-hub.js";
import { HeldEvents } from "./held-events.js";

/** What a start is told of the run it admits (see StartRunInput.watch). */
export interface AdmittedRunObserver {
  /**
   * The run is stored with its first `events`, published already, and this process executes
   * it; nothing else of it has been published yet.
   */
  admitted(runId: string, events: readonly StoredEvent[]): void;
}

/**
 * The events a run publishes here from its admission on (the admission's own, then what it
 * publishes once it executes here), held for the stream the start
 * request opens once the start has returned: that stream begins with them (its run's first
 * events, in order) instead of reading them back from the store. Every published event is
 * already stored, so this holds nothing the store does not. Bounded as a watcher is
 * (MAX_HELD_EVENTS, MAX_HELD_BYTES): past either it holds nothing and the stream reads from
 * the store as any other. Its hub subscription lasts until `take` or `release`.
 */
export class AdmissionWatch implements AdmittedRunObserver {
  #runId: string | null = null;
  #held: HeldEvents | null = null;
  #unsubscribe: (() => void) | null = null;

  constructor(private readonly hub: EventHub) {}

  admitted(runId: string, first: readonly StoredEvent[]): void {
    this.release();
    const held = new HeldEvents();
    for (const event of first) held.hold(event);
    this.#runId = runId;
    this.#held = held;
    // It stands for no watcher (the stream that takes it over is one): not counted as one.
    this.#unsubscribe = this.hub.subscribe(runId, (event) => held.hold(event), { watchers: () => 0 });
  }

  /**
   * What `runId` published since its admission, in the order published (its first event
   * first); null when this watch did not see that run admitted, or held too much. Ends the watch.
   */
  take(runId: string): readonly StoredEvent[] | null {
    const held = this.#runId === runId ? this.#held : null;
    this.release();
    return held === null || held.overflowed ? null : held.takeAll();
  }

  /** Ends the watch (nothing is held any more); idempotent. */
  release(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#runId = null;
    this.#held = null;
  }
}
