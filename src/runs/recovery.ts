import type { Logger } from "pino";
import type { RunStats } from "../agent/stats.js";
import { abortedOutcome, interruptedOutcome } from "../agent/tool-results.js";
import type { RunRecord } from "../store/runs.js";
import type { Store } from "../store/store.js";
import { closeOpenCalls } from "./close-open-calls.js";
import type { EventHub } from "./event-hub.js";
import type { RunManager } from "./run-manager.js";
import { RunRecorder } from "./run-recorder.js";

export type RestartMode = "resume" | "abort";

export interface RecoveryReport {
  resumed: string[];
  aborted: string[];
  interruptedToolCalls: number;
}

/** This run's counters so far, rebuilt from what was committed (for `maxTurns` on resume). */
function statsSoFar(store: Store, run: RunRecord): RunStats {
  const steps = store.steps.ofRun(run.id);
  const assistants = store.messages.ofRun(run.sessionId, run.id).filter((m) => m.role === "assistant").length;
  const started = store.toolCalls.ofRun(run.id).filter((c) => c.startedAt !== null).length;
  return {
    modelCalls: Math.max(steps.length, assistants),
    toolCalls: started,
    turns: assistants,
    inputTokens: steps.reduce((sum, s) => sum + (s.model.usage?.inputTokens ?? 0), 0),
    outputTokens: steps.reduce((sum, s) => sum + (s.model.usage?.outputTokens ?? 0), 0),
    durationMs: Math.max(0, Date.now() - Date.parse(run.createdAt)),
  };
}

/**
 * Settles every run the previous process left unfinished, from the database alone.
 * A call whose tool had started but has no result gets an INTERRUPTED result (it is
 * never executed twice). Then each run either resumes from its last commit (calls
 * awaiting approval await it again) or, in `abort` mode, has its open calls closed
 * and ends `aborted`.
 */
export function recoverRuns({
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
}): RecoveryReport {
  const report: RecoveryReport = { resumed: [], aborted: [], interruptedToolCalls: 0 };
  for (const run of store.runs.live()) {
    const recorder = new RunRecorder(store, hub, run.id, run.sessionId);
    const session = store.sessions.get(run.sessionId);
    // A run a client had cancelled is never continued.
    const abort = mode === "abort" || !session || run.status === "cancelling";
    // A call whose tool had started has no knowable outcome; when resuming, the other
    // open calls are left to the loop (awaiting approval again, or not yet started).
    report.interruptedToolCalls += closeOpenCalls({
      store,
      recorder,
      outcomeFor: (call) => (call.state === "started" ? interruptedOutcome() : abortedOutcome()),
      only: (call) => abort || call.state === "started",
    });
    if (abort) {
      recorder.write(() => {
        store.runs.finish(run.id, {
          stopReason: "aborted",
          error: null,
          stats: statsSoFar(store, run),
          finishedAt: new Date().toISOString(),
        });
        const view = manager.get(run.id);
        return view ? [{ type: "run.finished", run: view }] : [];
      });
      report.aborted.push(run.id);
      continue;
    }
    const restartInput = store.messages.ofRun(run.sessionId, run.id).length === 0;
    manager.resume(run, session, statsSoFar(store, run), restartInput);
    report.resumed.push(run.id);
  }
  if (report.resumed.length || report.aborted.length) logger.info(report, "settled runs left by the previous process");
  return report;
}
