import { emptyStats } from "../../src/agent/stats.js";
import type { RunEventBody } from "../../src/domain/run-events.js";
import type { FeedSink } from "../../src/runs/event-feed.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { MAX_HELD_BYTES } from "../../src/runs/held-events.js";
import type { RunRecorder } from "../../src/runs/recorder.js";
import type { StoredEvent } from "../../src/store/store.js";

/** A hub that loses the publishing of some seqs, as a seam between a read and the switch to live might. */
export class LossyHub extends EventHub {
  readonly lost = new Set<number>();
  override publish(runId: string, events: readonly StoredEvent[]): void {
    super.publish(
      runId,
      events.filter((e) => !this.lost.has(e.seq)),
    );
  }
}

/** Writes `events` in one batch through the recorder (stored, then published). */
export const writeEvents = (recorder: RunRecorder, ...events: RunEventBody[]) =>
  recorder.write(() => ({ changes: [], events }));

/** Finishes the recorder's run ("complete") with its `run.finished` event. */
export const finishRun = (recorder: RunRecorder) =>
  recorder.write(() => ({
    changes: [
      { kind: "finish", stopReason: "complete", stopDetail: null, error: null, stats: emptyStats(), finishedAt: "now" },
    ],
    events: [{ type: "run.finished", run: { id: "run_1" } as never }],
  }));

/** A sink that keeps what it is sent; `stalled` reports a backlog past the bound until `drain()`. */
export class CollectingSink implements FeedSink {
  readonly events: StoredEvent[] = [];
  readonly batches: number[] = [];
  stalled = false;
  #drained: (() => void) | null = null;
  /** The arrays handed to `write`, as they were given. */
  readonly written: (readonly StoredEvent[])[] = [];
  send(events: readonly StoredEvent[]): void {
    this.events.push(...events);
    this.batches.push(events.length);
  }
  write(events: readonly StoredEvent[]): void {
    this.written.push(events);
    this.send(events);
  }
  backlogBytes(): number {
    return this.stalled ? MAX_HELD_BYTES + 1 : 0;
  }
  drained(): Promise<void> {
    return this.stalled ? new Promise((resolve) => (this.#drained = resolve)) : Promise.resolve();
  }
  drain(): void {
    this.stalled = false;
    this.#drained?.();
  }
  get seqs(): number[] {
    return this.events.map((e) => e.seq);
  }
}
