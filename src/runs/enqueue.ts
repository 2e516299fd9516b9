import type { RunView } from "../domain/run.js";
import { AppError, isServerFull } from "../errors.js";
import { runView } from "../store/runs.js";
import type { Store } from "../store/store.js";
import { type AdmissionDeps, admitRun, type StartRunInput } from "./admission.js";
import type { EventHub } from "./event-hub.js";
import type { LiveRun } from "./live-run.js";
import type { StartedRun } from "./run-manager-deps.js";

export interface EnqueueDeps {
  store: Store;
  hub: EventHub;
  admission: AdmissionDeps;
  /** Starts the run at once, or refuses it (see startNow). */
  startNow: (params: StartRunInput) => Promise<StartedRun>;
  /** Starts the session's oldest queued run, within MAX_CONCURRENT_RUNS (see QueuedStarts). */
  startQueued: (sessionId: string) => Promise<LiveRun | null>;
  /** The run as clients see it now. */
  get: (runId: string) => Promise<RunView | null>;
}

/**
 * `ifBusy: "enqueue"`: starts the run at once when the session is idle, nothing is queued and
 * a slot is free; else stores it `queued` and starts the session's queue (see QueuedStarts).
 */
export async function enqueueRun(deps: EnqueueDeps, params: StartRunInput): Promise<StartedRun> {
  if (!(await deps.store.runs.anyQueued(params.session.id))) {
    try {
      return await deps.startNow(params);
    } catch (err) {
      if (!(err instanceof AppError && (err.code === "SESSION_BUSY" || isServerFull(err)))) throw err;
    }
  }
  const admission = await admitRun(deps.admission, params, { queued: true });
  if (!admission.created) return admission;
  const { record, events } = admission;
  deps.hub.publish(record.id, events);
  const started = await deps.startQueued(record.sessionId);
  if (started?.id === record.id) return { run: runView(started.record), created: true };
  return { run: (await deps.get(record.id)) ?? runView(record), created: true };
}
