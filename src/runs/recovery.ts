import type { Logger } from "pino";
import { abortedOutcome, interruptedOutcome } from "../agent/tool-results.js";
import type { Store } from "../store/store.js";
import type { EventHub } from "./event-hub.js";
import { closeOpenCalls, finishRun } from "./finish.js";
import { queueLeftInput } from "./queue.js";
import { RunRecorder } from "./recorder.js";
import type { RunManager } from "./run-manager.js";
import { abortedDetail } from "./stop-details.js";

export type RestartMode = "resume" | "abort";

export interface RecoveryReport {
  resumed: string[];
  aborted: string[];
  interruptedToolCalls: number;
  /** Queued runs started (their sessions had no active run left). */
  started: string[];
  /** Steered input left on runs that had ended, queued as new runs. */
  requeuedInputs: number;
}

/**
 * Settles every run the previous process left unfinished, from the database alone. A call
 * whose tool had started but has no result gets an INTERRUPTED result (it is never executed
 * twice). Then each run either resumes from its last commit, with the stats stored with its
 * last step (calls awaiting approval await it again, their timeout counted from their
 * request), or, in `abort` mode, ends `aborted` through the one finish of a run. Then steered
 * input left on ended runs is queued as new runs, and each session with queued runs and no
 * active run starts its oldest.
 */
export async function recoverRuns({
  store,
  hub,
  manager,
  mode,
  logger,
}: {
  store: Store;
  hub: EventHub;
  manager: RunManager;
  mode: RestartMode;
  logger: Logger;
}): Promise<RecoveryReport> {
  const report: RecoveryReport = { resumed: [], aborted: [], interruptedToolCalls: 0, started: [], requeuedInputs: 0 };
  for (const run of await store.runs.unfinished()) {
    const recorder = await RunRecorder.open({ store, hub, runId: run.id, sessionId: run.sessionId });
    const session = await store.sessions.get(run.sessionId);
    // A run a client had cancelled is never continued.
    const abort = mode === "abort" || !session || run.status === "cancelling";
    const outcomeFor = (call: { state: string }) =>
      call.state === "started" ? interruptedOutcome() : abortedOutcome();
    if (abort) {
      report.interruptedToolCalls += (await store.toolCalls.inState(run.id, "started")).length;
      await finishRun({
        store,
        recorder,
        record: run,
        end: {
          stopReason: "aborted",
          stopDetail: abortedDetail({
            by:
              run.status === "cancelling"
                ? "by a DELETE /runs/{id} request before the server restarted"
                : !session
                  ? "because its session was deleted"
                  : "because the server restarted with ON_RESTART=abort",
            stats: run.stats,
          }),
          error: null,
          stats: run.stats,
        },
        outcomeFor,
      });
      report.aborted.push(run.id);
      continue;
    }
    // The other open calls are left to the loop (awaiting approval again, or not yet started).
    report.interruptedToolCalls += await closeOpenCalls({
      store,
      recorder,
      outcomeFor,
      only: (call) => call.state === "started",
    });
    const restartInput = (await store.messages.ofRun(run.sessionId, run.id)).length === 0;
    await manager.resume({ record: run, session, recorder, restartInput });
    report.resumed.push(run.id);
  }
  for (const input of await store.inputs.orphaned()) {
    if (await queueLeftInput({ store, hub }, input)) report.requeuedInputs++;
  }
  for (const sessionId of await store.runs.queuedSessions()) {
    const started = await manager.startQueued(sessionId);
    if (started) report.started.push(started.id);
  }
  if (report.resumed.length || report.aborted.length || report.started.length || report.requeuedInputs)
    logger.info(report, "settled runs left by the previous process");
  return report;
}
