import type { Logger } from "pino";
import type { ModelClient } from "../agent/model.js";
import type { StepTrace } from "../agent/step-trace.js";
import type { AnyAgentTool } from "../agent/tool.js";
import type { ApprovalCeiling } from "../domain/approval-ceiling.js";
import type { RunView } from "../domain/run.js";
import type { WebhookTarget } from "../domain/webhook.js";
import type { RunRecord, SessionRecord, Store } from "../store/store.js";
import type { EventHub } from "./event-hub.js";
import type { InstanceIdentity } from "./lease-renewal.js";
import type { RunRecorder } from "./recorder.js";
import type { RestartMode } from "./recovery.js";

/** A start's answer: the run, whether this request created it, and whether its input joined the active run. */
export interface StartedRun {
  run: RunView;
  created: boolean;
  /** `ifBusy: "steer"`: the input was taken by the active run, which `run` is. */
  steered?: boolean;
  /** A steer repeated with its idempotency key: the run took that input already. */
  replayed?: boolean;
}

export interface RunManagerDeps {
  store: Store;
  hub: EventHub;
  model: ModelClient;
  defaultModel?: string;
  /** The tools a session's runs may use, bound to its workspace. */
  toolsFor: (session: SessionRecord) => AnyAgentTool[];
  maxConcurrentRuns: number;
  /** Live runs one owner (API key) may have at once; 0 or absent: no such limit. */
  maxRunsPerKey?: number;
  approvalTimeoutMs: number;
  /** APPROVAL_POLICY_MAX; absent: no ceiling. */
  approvalCeiling?: ApprovalCeiling;
  /** Tool calls of one model reply that are executed (MAX_TOOL_CALLS_PER_TURN). */
  maxToolCallsPerTurn?: number;
  /** How long a run's end may fail to be stored before it is reported anyway (default 5 s). */
  finishReportMs?: number;
  /** WEBHOOK_URL's target: where a run posts when neither it nor its session names one. */
  defaultWebhook?: WebhookTarget | null;
  /** This process as the owner of the runs it executes (see RunOwnership); default: a fresh id, 30 s leases. */
  instance?: InstanceIdentity;
  /** How runs left by a lost or stopped process are taken up (ON_RESTART); default `resume`. */
  onRestart?: RestartMode;
  /**
   * Resolves once a run another instance executes has finished, or once `signal` aborts (see
   * waitForRelayedEnd); absent (one process over the database): a run not executed here is not waited for.
   */
  waitElsewhere?: (runId: string, signal: AbortSignal) => Promise<void>;
  /**
   * Told each time this process stops executing a run: its end stored here, or the run given
   * up unfinished (`unfinished`: stopped by a shutdown, its lease lost or unrenewed, a write's
   * outcome unknown; its end not stored here).
   */
  onLeft?: (runId: string, how: { unfinished: boolean }) => void;
  logger: Logger;
}

/** A run to continue here: left unfinished by a previous process, or claimed from a lost one. */
export interface ResumeParams {
  record: RunRecord;
  session: SessionRecord;
  recorder: RunRecorder;
  /** Nothing of the run was committed: it starts again from its input. */
  restartInput: boolean;
  /** Its last step as stored (none when it starts again from its input). */
  priorStep?: StepTrace;
  /** When its lease was taken (performance.now(), before the claim was sent); default now. */
  heldSince?: number;
}
