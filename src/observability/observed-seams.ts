import { EventHub } from "../runs/event-hub.js";
import type { Store, StoredEvent } from "../store/store.js";
import type { RunObserver } from "./observer.js";

/** When each stored event's commit ended (performance.now()), for the delivery lag. */
type CommitTimes = WeakMap<StoredEvent, number>;

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
 * The store with its run writes (`runs.create`, `commitRun`) timed and reported to `observer`;
 * everything else passes through untouched.
 */
function observedStore(store: Store, observer: RunObserver, times: CommitTimes): Store {
  const stamp = (stored: StoredEvent[]): StoredEvent[] => {
    const at = performance.now();
    for (const event of stored) times.set(event, at);
    return stored;
  };
  return {
    ...store,
    runs: {
      ...store.runs,
      create(run, events) {
        const started = performance.now();
        const report = (ok: boolean) =>
          safely(() =>
            observer.committed({
              runId: run.id,
              operation: "create_run",
              run,
              changes: [],
              events,
              ok,
              seconds: elapsed(started),
            }),
          );
        return store.runs.create(run, events).then(
          (stored) => {
            report(true);
            return stamp(stored);
          },
          (err: unknown) => {
            report(false);
            throw err;
          },
        );
      },
    },
    commitRun(runId, changes, events) {
      const started = performance.now();
      const report = (ok: boolean) =>
        safely(() =>
          observer.committed({ runId, operation: "commit_run", changes, events, ok, seconds: elapsed(started) }),
        );
      return store.commitRun(runId, changes, events).then(
        (stored) => {
          report(true);
          return stamp(stored);
        },
        (err: unknown) => {
          report(false);
          throw err;
        },
      );
    },
  };
}

/** An event hub that reports each delivery of committed events to live watchers. */
class ObservedEventHub extends EventHub {
  constructor(
    private readonly observer: RunObserver,
    private readonly times: CommitTimes,
  ) {
    super();
  }

  override publish(runId: string, events: readonly StoredEvent[]): void {
    super.publish(runId, events);
    const watchers = this.watcherCount(runId);
    const first = events[0];
    const committedAt = first ? this.times.get(first) : undefined;
    if (watchers > 0 && committedAt !== undefined) {
      const lagSeconds = elapsed(committedAt);
      safely(() => this.observer.delivered({ runId, events: events.length, watchers, lagSeconds }));
    }
  }
}

/** The store and the event hub every run goes through, reporting to `observer`. */
export function observedSeams(store: Store, observer: RunObserver): { store: Store; hub: EventHub } {
  const times: CommitTimes = new WeakMap();
  return { store: observedStore(store, observer, times), hub: new ObservedEventHub(observer, times) };
}
