import { emptyStats } from "../agent/stats.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { RunView } from "../domain/run.js";
import type { WebhookTarget } from "../domain/webhook.js";
import { conflict, sessionBusy, shuttingDown, tooManyRuns } from "../errors.js";
import { newId } from "../ids.js";
import { isConflict } from "../store/errors.js";
import { defaultRunLimits, type RunLimits, runView } from "../store/runs.js";
import type { LeaseTerms, RunRecord, SessionRecord, Store, StoredEvent } from "../store/store.js";
import { differingFields } from "./idempotency.js";
import type { LiveRuns } from "./registry.js";
import { planOfRun } from "./run-plan.js";

export interface StartRunInput {
  session: SessionRecord;
  input: string;
  maxTurns: number;
  contextMaxChars?: number;
  approval?: ApprovalPolicy;
  idempotencyKey?: string;
  /** Budgets, loop guard and planning; absent: none, the default guard, no planning. */
  limits?: RunLimits;
  /** The run's own webhook target (else its session's, else the server's). */
  webhook?: WebhookTarget;
}

export interface AdmissionDeps {
  store: Store;
  registry: LiveRuns;
  maxConcurrentRuns: number;
  /** Unfinished runs one owner (API key) may have at once, on every instance; 0 or absent: no such limit. */
  maxRunsPerKey?: number;
  accepting: () => boolean;
  /** WEBHOOK_URL's target; absent: none. */
  defaultWebhook?: WebhookTarget | null;
  /** The lease the admitting process takes on the run it inserts. */
  lease: LeaseTerms;
}

/** The run an earlier request with the same idempotency key started, if the request is the same. */
async function sameRequestRun(store: Store, params: StartRunInput): Promise<RunRecord | null> {
  if (!params.idempotencyKey) return null;
  const existing = await store.runs.byIdempotencyKey(params.session.id, params.idempotencyKey);
  if (!existing) return null;
  const differs = differingFields(existing, params);
  if (differs.length) {
    throw conflict(
      "IDEMPOTENCY_KEY_REUSED",
      `this Idempotency-Key was used for a run started with a different ${differs.join(", ")}`,
      { runId: existing.id, differs },
    );
  }
  return existing;
}

export type Admission =
  | { created: false; run: RunView }
  | { created: true; record: RunRecord; events: StoredEvent[]; release: () => void };

/**
 * Admits a new run: the same run again for a repeated idempotency key; else, within this
 * process's limits, the run's row and `run.started` event are written. The database decides
 * whether the session is busy: the insert is refused while it has an unfinished run (409
 * SESSION_BUSY naming it). A created run holds a slot of the registry until `release`.
 */
export async function admitRun(deps: AdmissionDeps, params: StartRunInput): Promise<Admission> {
  const { store, registry } = deps;
  const { session } = params;
  const repeated = await sameRequestRun(store, params);
  if (repeated) return { created: false, run: runView(repeated, await planOfRun(store, repeated)) };
  if (!deps.accepting()) throw shuttingDown();
  if (registry.size >= deps.maxConcurrentRuns) throw tooManyRuns(deps.maxConcurrentRuns, 1);
  const perKey = deps.maxRunsPerKey ?? 0;
  // Counted by the database, with the runs every instance executes.
  const ownerLimit = perKey > 0 && session.owner !== null ? { owner: session.owner, max: perKey } : undefined;
  const slot = registry.reserve(session.owner);
  const record: RunRecord = {
    id: newId("run"),
    sessionId: session.id,
    status: "running",
    stopReason: null,
    error: null,
    input: params.input,
    maxTurns: params.maxTurns,
    contextMaxChars: params.contextMaxChars ?? null,
    ...(params.limits ?? defaultRunLimits()),
    stopDetail: null,
    stats: emptyStats(),
    createdAt: new Date().toISOString(),
    finishedAt: null,
    approval: params.approval ?? null,
    idempotencyKey: params.idempotencyKey ?? null,
    webhook: params.webhook ?? session.webhook ?? deps.defaultWebhook ?? null,
  };
  let events: StoredEvent[];
  try {
    events = await store.runs.create(
      record,
      [{ type: "run.started", runId: record.id, seq: 1, at: record.createdAt }],
      { lease: deps.lease, limit: ownerLimit },
    );
  } catch (err) {
    slot.release();
    if (isConflict(err, "owner_runs")) throw tooManyRuns(perKey, 1, "key");
    if (isConflict(err, "active_run")) {
      const active = await store.runs.active(session.id);
      throw sessionBusy(session.id, active?.id ?? "(finished meanwhile)");
    }
    if (isConflict(err, "idempotency_key")) {
      // The same key, started concurrently: that request's run is this one's answer.
      const again = await sameRequestRun(store, params);
      if (again) return { created: false, run: runView(again, await planOfRun(store, again)) };
    }
    throw err;
  }
  return { created: true, record, events, release: slot.release };
}
