import { runView } from "../store/runs.js";
import { type AdmissionDeps, admitRun, type StartRunInput } from "./admission.js";
import type { EventHub } from "./event-hub.js";
import type { HistoryTail, SessionHistory } from "./history-tail.js";
import { LiveRun } from "./live-run.js";
import { RunRecorder } from "./recorder.js";
import type { LiveRuns, SlotHandover } from "./registry.js";
import type { StartedRun } from "./run-manager-deps.js";

export interface StartNowDeps {
  admission: AdmissionDeps;
  hub: EventHub;
  history: HistoryTail;
  /** Where the run is noted as starting until its registration (a DELETE meanwhile is kept for it). */
  registry: Pick<LiveRuns, "starting" | "abandonStart">;
  /** This process's instance id: the new run's lease (epoch 1) names it. */
  owner: string;
  /**
   * Launches the run here (registering it at once), from `history` if read, else reading it;
   * resolves once its input is committed (or it ended first).
   */
  execute: (live: LiveRun, history?: SessionHistory) => Promise<void>;
}

/**
 * Starts a run now, executed here (see admitRun: the same run again for a repeated
 * idempotency key, 409 SESSION_BUSY while the session has an active run; in the slot
 * `handover` kept for it, if any); resolves once its input is committed. Its first events are
 * published as soon as they are stored. The session's history is read once the run is stored:
 * the recorder's messages follow its last one, and the loop starts from it, without another read.
 */
export async function startNow(
  deps: StartNowDeps,
  params: StartRunInput,
  { handover }: { handover?: SlotHandover } = {},
): Promise<StartedRun> {
  // The lease is taken by admitRun's insert: held from before it is sent (see LiveRun.heldSince).
  const heldSince = performance.now();
  const admission = await admitRun(deps.admission, params, { handover });
  if (!admission.created) return admission;
  const { record, events } = admission;
  deps.registry.starting(record.id);
  deps.hub.publish(record.id, events);
  let recorder: RunRecorder;
  let history: SessionHistory | undefined;
  try {
    // A history that cannot be read (a corrupt row, storage failing) is the run's own failure:
    // its execution reads it again and ends the run with the error, rather than leaving it stored
    // and never executed.
    history = await deps.history.read(record.sessionId).catch(() => undefined);
    recorder = await RunRecorder.open({
      store: deps.admission.store,
      hub: deps.hub,
      runId: record.id,
      sessionId: record.sessionId,
      lastEvent: 1,
      // Unknown without the history: read at the recorder's first write, so opening cannot fail.
      lastMessage: history ? (history.stored.at(-1)?.seq ?? 0) : null,
      lease: { runId: record.id, owner: deps.owner, epoch: 1 },
    });
  } catch (err) {
    deps.registry.abandonStart(record.id);
    throw err;
  } finally {
    admission.release();
  }
  const executing = deps.execute(new LiveRun(record, params.session, recorder, heldSince), history);
  // Registered as executed here by now, and nothing more of it published than `events`.
  params.watch?.admitted(record.id, events);
  await executing;
  return { run: runView(record), created: true };
}
