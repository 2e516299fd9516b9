import { EventHub } from "../runs/event-hub.js";
import type { Store, StoredEvent } from "../store/store.js";
import type { CommittedBatch, RunObserver } from "./observer.js";

/** When each stored batch's commit ended (performance.now()), for the delivery lag. */
type CommitTimes = WeakMap<readonly StoredEvent[], number>;

const elapsed = (since: number): number => (performance.now() - since) / 1000;

/** Runs an observer's callback; what it throws never reaches the write it observes. */
function safely(report: () => void): void {
  try {
    report();
  } catch {
    // An observer's failure loses a measurement, nothing else.
  }
}

/**
 * Observes one write: `write`'s promise is returned as it is (no extra step on the commit
 * path), and the report runs in a reaction registered before the caller's, so the batch is
 * stamped before the caller publishes it.
 */
function observeWrite(
  write: Promise<StoredEvent[]>,
  batch: CommittedBatch,
  observer: RunObserver,
  times: CommitTimes,
): Promise<StoredEvent[]> {
  const started = performance.now();
  write.then(
    (stored) => {
      const now = performance.now();
      times.set(stored, now);
      batch.seconds = (now - started) / 1000;
      safely(() => observer.committed(batch));
    },
    () => {
      batch.ok = false;
      batch.seconds = elapsed(started);
      safely(() => observer.committed(batch));
    },
  );
  return write;
}

/**
 * The store with its run writes (`runs.create`, `commitRun`) timed and reported to `observer`;
 * everything else passes through untouched.
 */
function observedStore(store: Store, observer: RunObserver, times: CommitTimes): Store {
  return {
    ...store,
    runs: {
      ...store.runs,
      create: (run, events) =>
        observeWrite(
          store.runs.create(run, events),
          { runId: run.id, operation: "create_run", run, changes: [], events, ok: true, seconds: 0 },
          observer,
          times,
        ),
    },
    commitRun: (runId, changes, events) =>
      observeWrite(
        store.commitRun(runId, changes, events),
        { runId, operation: "commit_run", changes, events, ok: true, seconds: 0 },
        observer,
        times,
      ),
  };
}

/**
 * An event hub that reports each delivery of committed events to live watchers: those it is
 * given as the store returned them (the batch the commit stamped).
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
    const watchers = this.watcherCount(runId);
    if (watchers === 0) return;
    const lagSeconds = elapsed(committedAt);
    safely(() => this.observer.delivered({ runId, events: events.length, watchers, lagSeconds }));
  }
}

/** The store and the event hub every run goes through, reporting to `observer`. */
export function observedSeams(store: Store, observer: RunObserver): { store: Store; hub: EventHub } {
  const times: CommitTimes = new WeakMap();
  return { store: observedStore(store, observer, times), hub: new ObservedEventHub(observer, times) };
}
