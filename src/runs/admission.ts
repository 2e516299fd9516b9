import { emptyStats } from "../agent/stats.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { IfBusy, RunView } from "../domain/run.js";
import type { ResolvedWebhookTarget, WebhookTarget } from "../domain/webhook.js";
import { conflict, notFound, sessionBusy, shuttingDown, tooManyRuns } from "../errors.js";
import { idFor, newId } from "../ids.js";
import { isConflict } from "../store/errors.js";
import { defaultRunLimits, type RunLimits, runView } from "../store/runs.js";
import type { LeaseTerms, RunRecord, SessionRecord, Store, StoredEvent } from "../store/store.js";
import type { AdmittedRunObserver } from "./admission-watch.js";
import { type DefaultedField, differingFields } from "./idempotency.js";
import { withLiveDuration } from "./live-run.js";
import type { LiveRuns, SlotHandover } from "./registry.js";
import { planOfRun } from "./run-plan.js";

export interface StartRunInput {
  session: SessionRecord;
  input: string;
  maxTurns: number;
  contextMaxChars?: number;
  approval?: ApprovalPolicy;
  idempotencyKey?: string;
  /** The settings the request left to the server's defaults (see StartRequestBody.defaulted). */
  defaulted?: readonly DefaultedField[];
  /** Budgets, loop guard and planning; absent: none, the default guard, no planning. */
  limits?: RunLimits;
  /** The run's own webhook target (else its session's, else the server's). */
  webhook?: WebhookTarget;
  /** What to do when the session has an active run (default `reject`: 409 SESSION_BUSY). */
  ifBusy?: IfBusy;
  /** The steered input this run is made from: removed with the run's insert (see Store.runs.create). */
  takesInput?: string;
  /** With `ifBusy: "interrupt"`: only this run is interrupted; another active run is not (409 SESSION_BUSY). */
  interrupts?: string;
  /** Told of a run this start creates and executes here, once registered, with the events published so far (see AdmittedRunObserver). */
  watch?: AdmittedRunObserver;
  /** Aborted when the request's client has left: a steer stops waiting for its input to be taken (see steerActive). */
  gone?: AbortSignal;
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
export async function sameRequestRun(store: Store, params: StartRunInput): Promise<RunRecord | null> {
  if (!params.idempotencyKey) return null;
  const existing = await store.runs.keyed(params.session.id, params.idempotencyKey, params.input);
  if (!existing) return null;
  const differs = differingFields(existing, params);
  if (differs.length) {
    throw conflict(
      "IDEMPOTENCY_KEY_REUSED",
      `this Idempotency-Key was used for a run started with a different ${differs.join(", ")}`,
      { runId: existing.id, differs },
    );
  }
  // The same request: its answer is the run, read whole only now.
  return store.runs.get(existing.id);
}

/**
 * The answer to a start an earlier request with the same idempotency key made (see
 * sameRequestRun): its run, with its plan (see planOfRun) and, while `registry` has it executing here, its duration up to now
 * (as RunManager.get shows it); null when there is none.
 */
export async function repeatedStart(
  deps: { store: Store; registry?: LiveRuns },
  params: StartRunInput,
): Promise<{ created: false; run: RunView } | null> {
  const repeated = await sameRequestRun(deps.store, params);
  if (!repeated) return null;
  const view = runView(repeated, await planOfRun(deps.store, repeated));
  return { created: false, run: withLiveDuration(view, deps.registry?.get(repeated.id)) };
}

export type Admission =
  | { created: false; run: RunView }
  | { created: true; record: RunRecord; events: StoredEvent[]; release: () => void };

/** The run's target: its own or its session's (`named`), else the server's default, marked as such. */
const resolvedTarget = (
  named: WebhookTarget | null,
  serverDefault: WebhookTarget | null,
): ResolvedWebhookTarget | null =>
  named ? { ...named, serverDefault: false } : serverDefault ? { ...serverDefault, serverDefault: true } : null;

/** A new run's record: `queued`, or `running` (the default). */
export function newRunRecord(
  params: StartRunInput,
  { status = "running", defaultWebhook }: { status?: "queued" | "running"; defaultWebhook?: WebhookTarget | null },
): RunRecord {
  return {
    id: newId("run"),
    sessionId: params.session.id,
    status,
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
    webhook: resolvedTarget(params.webhook ?? params.session.webhook ?? null, defaultWebhook ?? null),
  };
}

/** A new queued run of `from`'s session with `input`, with `from`'s settings and webhook target. */
export function runLike(from: RunRecord, input: string): RunRecord {
  return {
    ...from,
    id: newId("run"),
    status: "queued",
    stopReason: null,
    stopDetail: null,
    error: null,
    input,
    stats: emptyStats(),
    createdAt: new Date().toISOString(),
    finishedAt: null,
    idempotencyKey: null,
  };
}

/**
 * Admits a new run: the same run again for a repeated idempotency key; else, within this
 * process's limits, the run's row and `run.started` event are written. The database decides
 * whether the session is busy: the insert is refused while it has an active run (409
 * SESSION_BUSY naming it), and counts the owner's unfinished runs, every instance's
 * (MAX_RUNS_PER_KEY). A created run holds a slot of the registry until `release` (the one
 * `handover` kept for it, when it has one: see LiveRuns.handOver), and this process holds its
 * lease. With `queued`, the run is stored `queued` with its `run.queued` event instead: it
 * takes no slot and no lease and is never refused as busy (see queue.ts for its start).
 */
export async function admitRun(
  deps: AdmissionDeps,
  params: StartRunInput,
  { queued = false, handover }: { queued?: boolean; handover?: SlotHandover } = {},
): Promise<Admission> {
  const { store, registry } = deps;
  const { session } = params;
  const repeated = await repeatedStart(deps, params);
  if (repeated) return repeated;
  // The run's lease is taken after a claim under way, which leaves alone only the runs executed here.
  const claim = queued ? null : registry.claimed();
  if (claim) await claim;
  if (!deps.accepting()) throw shuttingDown();
  // The slot of the run this start interrupted, kept for it; else a free one.
  const handed = queued ? null : (handover?.take() ?? null);
  if (!queued && !handed && registry.size >= deps.maxConcurrentRuns) throw tooManyRuns(deps.maxConcurrentRuns, 1);
  const perKey = deps.maxRunsPerKey ?? 0;
  // Counted by the database, with the runs every instance executes.
  const ownerLimit = perKey > 0 && session.owner !== null ? { owner: session.owner, max: perKey } : undefined;
  const slot = queued ? { release: () => {} } : (handed ?? registry.reserve());
  const record = newRunRecord(params, { status: queued ? "queued" : "running", defaultWebhook: deps.defaultWebhook });
  let events: StoredEvent[];
  try {
    events = await store.runs.create(
      record,
      [{ type: queued ? "run.queued" : "run.started", runId: record.id, seq: 1, at: record.createdAt }],
      {
        lease: queued ? undefined : deps.lease,
        limit: ownerLimit,
        takesInput: params.takesInput,
        // An enqueue's (or steer's) start at once on an idle session is the queue's start: it
        // yields to an interrupting start holding the queue, and is queued behind it instead.
        unlessQueueHeld: !queued && (params.ifBusy === "enqueue" || params.ifBusy === "steer"),
      },
    );
  } catch (err) {
    slot.release();
    if (isConflict(err, "active_run") || isConflict(err, "idempotency_key") || isConflict(err, "owner_runs")) {
      // The same key, started concurrently: that request's run is this one's answer (the store
      // may report it as the session's active run, which it is, or as the run that fills the
      // key's MAX_RUNS_PER_KEY, before the key).
      const again = await repeatedStart(deps, params);
      if (again) return again;
    }
    if (isConflict(err, "owner_runs")) throw tooManyRuns(perKey, 1, "key");
    if (isConflict(err, "session_gone")) throw notFound("session", session.id);
    if (isConflict(err, "active_run")) {
      const active = await store.runs.active(session.id);
      throw sessionBusy(session.id, active?.id ?? "(finished meanwhile)");
    }
    throw err;
  }
  // A steer under the same key that raced this start stored its input before this insert, after
  // looking for this run (see steerActive): the input is this run's (a failure here leaves it
  // to that steer's own look for the run after its add).
  const steered = steerInputId(params);
  if (steered !== undefined) await store.inputs.withdraw(steered).catch(() => false);
  return { created: true, record, events, release: slot.release };
}

/** The id a steer's input gets from the request's idempotency key (the same for a retry); none without a key. */
export function steerInputId(params: Pick<StartRunInput, "session" | "idempotencyKey">): string | undefined {
  if (params.idempotencyKey === undefined) return undefined;
  return idFor("msg", `steer\n${params.session.id}\n${params.idempotencyKey}`);
}
