import type { RunEvent } from "../domain/run-events.js";
import { ObjectSlot } from "../object-slot.js";
import { EventHub } from "../runs/event-hub.js";
import { isConflict } from "../store/errors.js";
import type { Store, StoredEvent } from "../store/store.js";
import type { CommittedBatch, RunObserver } from "./observer.js";
import { endStoredAfterAll } from "./unanswered-end.js";

/**
 * When a write's commit ended (performance.now()), kept on the array of stored events it
 * resolved with, which its writer then publishes; cleared once published. Not a Map by run:
 * a Map that has grown old and fills and empties with every group of commits reallocates its
 * table in the old generation each time, which only a full collection frees.
 */
type CommitTimes = ObjectSlot<readonly StoredEvent[], number | undefined>;

const elapsed = (since: number): number => (performance.now() - since) / 1000;

/**
 * What the observed writes share: the store they go to, the observer, their commit times, and
 * the read-backs in flight of writes holding a run's end that got no answer, by run (see
 * observeWrite): a run's leaving is told once its read-back is told.
 */
interface Seams {
  store: Store;
  observer: RunObserver;
  times: CommitTimes;
  readBacks: Map<string, Promise<void>>;
}

/** Reports to the observer; what it throws never reaches the write it observes. */
function report<K extends keyof RunObserver>(
  observer: RunObserver,
  what: K,
  fact: Parameters<RunObserver[K]>[0],
): void {
  try {
    (observer[what] as (fact: Parameters<RunObserver[K]>[0]) => void)(fact);
  } catch {
    // An observer's failure loses a measurement, nothing else.
  }
}

/**
 * Observes one write: `write`'s promise is returned as it is (no extra step on the commit
 * path), and the report runs in a reaction registered before the caller's, so the commit's end
 * is noted before the caller publishes its events. A write holding its run's end that got no
 * answer is reported once its run is read back (see endStoredAfterAll): `ok` when it stored
 * the end (the run's end committed here, whoever else reads it), else `error`.
 */
function observeWrite(write: Promise<StoredEvent[]>, batch: CommittedBatch, seams: Seams): Promise<StoredEvent[]> {
  const { observer, times, readBacks } = seams;
  const started = performance.now();
  write.then(
    (stored) => {
      const now = performance.now();
      times.set(stored, now);
      batch.seconds = (now - started) / 1000;
      report(observer, "committed", batch);
    },
    (err: unknown) => {
      batch.seconds = elapsed(started);
      const { runId } = batch;
      const readBack =
        runId === null ? null : endStoredAfterAll({ store: seams.store, runId, changes: batch.changes, err });
      if (runId === null || !readBack) {
        batch.outcome = isConflict(err) ? "conflict" : "error";
        report(observer, "committed", batch);
        return;
      }
      const told = readBack.then((endStored) => {
        batch.outcome = endStored ? "ok" : "error";
        report(observer, "committed", batch);
      });
      readBacks.set(runId, told);
      void told.then(() => {
        if (readBacks.get(runId) === told) readBacks.delete(runId);
      });
    },
  );
  return write;
}

/**
 * Observes the start of a queued run as `observeWrite` does a write, once it resolves: which
 * run it started is known only then. A start that fails, or is refused, is reported as a
 * `commit_run` naming no run (`runId` null), its outcome `error` or `conflict` as any write's;
 * one that starts none (nothing queued, or the session busy) wrote nothing and is not reported.
 */
function observeStart(
  start: ReturnType<Store["runs"]["startQueued"]>,
  { observer, times }: Seams,
): ReturnType<Store["runs"]["startQueued"]> {
  const began = performance.now();
  start.then(
    (started) => {
      if (!started) return;
      const now = performance.now();
      times.set(started.events, now);
      // Its one `run.started`, as written (a few bytes).
      const events = started.events.map((stored) => JSON.parse(stored.data) as RunEvent);
      const { run } = started;
      const seconds = (now - began) / 1000;
      report(observer, "committed", {
        runId: run.id,
        operation: "commit_run",
        run,
        changes: [],
        events,
        outcome: "ok",
        seconds,
      });
    },
    (err: unknown) => {
      const outcome = isConflict(err) ? "conflict" : "error";
      const seconds = elapsed(began);
      report(observer, "committed", {
        runId: null,
        operation: "commit_run",
        changes: [],
        events: [],
        outcome,
        seconds,
      });
    },
  );
  return start;
}

/**
 * The store with its run writes (`runs.create`, `runs.startQueued`, `commitRun`) timed and
 * reported to `observer`; everything else (their options and fences too) passes through untouched.
 */
function observedStore(seams: Seams): Store {
  const { store } = seams;
  return {
    ...store,
    runs: {
      ...store.runs,
      create: (run, events, options) =>
        observeWrite(
          store.runs.create(run, events, options),
          { runId: run.id, operation: "create_run", run, changes: [], events, outcome: "ok", seconds: 0 },
          seams,
        ),
      startQueued: (sessionId, at, lease, options) =>
        observeStart(store.runs.startQueued(sessionId, at, lease, options), seams),
    },
    commitRun: (runId, changes, events, fence) =>
      observeWrite(
        store.commitRun(runId, changes, events, fence),
        { runId, operation: "commit_run", changes, events, outcome: "ok", seconds: 0 },
        seams,
      ),
  };
}

/**
 * An event hub that reports each delivery of committed events to live watchers, once per
 * commit: its writer publishes the very array the commit resolved with (as every writer does),
 * which carries the commit's end; an array published again, or another array, is not reported.
 */
class ObservedEventHub extends EventHub {
  constructor(
    private readonly observer: RunObserver,
    private readonly times: CommitTimes,
  ) {
    super();
  }

  override publish(...args: Parameters<EventHub["publish"]>): void {
    super.publish(...args);
    const [runId, events] = args;
    const committedAt = this.times.get(events);
    if (committedAt === undefined) return;
    this.times.set(events, undefined);
    const watchers = this.watcherCount(runId);
    if (watchers === 0) return;
    const lagSeconds = elapsed(committedAt);
    report(this.observer, "delivered", { runId, events: events.length, watchers, lagSeconds });
  }
}

/**
 * The store and the event hub every run goes through, reporting to `observer`, and `left`: to
 * be told each time this process stops executing a run (see RunObserver.left), reported after
 * the outcome of a write of the run being read back (see observeWrite).
 */
export function observedSeams(
  store: Store,
  observer: RunObserver,
): { store: Store; hub: EventHub; left: (runId: string) => void } {
  const times: CommitTimes = new ObjectSlot("commit time");
  const seams: Seams = { store, observer, times, readBacks: new Map() };
  return {
    store: observedStore(seams),
    hub: new ObservedEventHub(observer, times),
    left: (runId) => {
      const readBack = seams.readBacks.get(runId);
      if (readBack) void readBack.then(() => report(observer, "left", { runId }));
      else report(observer, "left", { runId });
    },
  };
}
