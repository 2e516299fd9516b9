import { EMPTY_PLAN_FOLD, foldPlan, type Plan, type PlanFold, planFromMessages, planOfFold } from "../agent/plan.js";
import type { RunView } from "../domain/run.js";
import { toAgentMessage } from "../domain/stored-message.js";
import { runView } from "../store/runs.js";
import type { RunRecord, Store } from "../store/store.js";

/** A run's plan, derived from its committed messages (so a restart or a replay sees the same plan). */
export async function planOfRun(store: Store, record: RunRecord): Promise<Plan | null> {
  if (!record.planning) return null;
  return planFromMessages((await store.messages.ofRun(record.sessionId, record.id)).map(toAgentMessage));
}

/** A run as stored, with its plan (from `plans` when given); null when there is no such run. */
export async function storedRunView({
  store,
  runId,
  plans,
}: {
  store: Store;
  runId: string;
  plans?: RunPlans;
}): Promise<RunView | null> {
  const record = await store.runs.get(runId);
  if (!record) return null;
  return runView(record, await (plans ? plans.of(store, record) : planOfRun(store, record)));
}

/** How many runs' plans a RunPlans keeps. */
const KEPT_PLANS = 1_000;

interface Kept {
  /** The run's messages up to this seq are folded in. */
  lastSeq: number;
  fold: PlanFold;
  /** Folded from a finished run's messages: all it will ever have. */
  complete: boolean;
}

/**
 * Plans of runs, as planOfRun makes them, each kept folded (see foldPlan) from the messages
 * read so far: a run's messages are append-only with increasing seqs, so a view of a planning
 * run reads only those committed since the last view here (a finished run's, none), not every
 * message of the run at each `GET /runs/{id}`, event stream or listing. Sound also for a run
 * executed by another instance (what it committed meanwhile is after the last seq read). The
 * database stays the truth; the most recently used KEPT_PLANS runs are kept.
 */
export class RunPlans {
  readonly #kept = new Map<string, Kept>();

  async of(store: Store, record: RunRecord): Promise<Plan | null> {
    if (!record.planning) return null;
    const known = this.#kept.get(record.id);
    if (known?.complete) {
      this.#keep(record.id, known);
      return planOfFold(known.fold);
    }
    const complete = record.status === "finished";
    const newer = await store.messages.ofRun(record.sessionId, record.id, known?.lastSeq ?? 0);
    // Another view of the run may have moved its entry on meanwhile: the later one stands.
    const current = this.#kept.get(record.id);
    const base = current && current.lastSeq >= (known?.lastSeq ?? 0) ? current : known;
    const fresh = base ? newer.filter((m) => m.seq > base.lastSeq) : newer;
    const kept: Kept = {
      lastSeq: fresh.at(-1)?.seq ?? base?.lastSeq ?? 0,
      fold: foldPlan(base?.fold ?? EMPTY_PLAN_FOLD, fresh.map(toAgentMessage)),
      complete: complete || (base?.complete ?? false),
    };
    this.#keep(record.id, kept);
    return planOfFold(kept.fold);
  }

  /** Keeps `kept` as the run's latest entry, dropping the least recently used beyond KEPT_PLANS. */
  #keep(runId: string, kept: Kept): void {
    this.#kept.delete(runId);
    this.#kept.set(runId, kept);
    if (this.#kept.size > KEPT_PLANS) this.#kept.delete(this.#kept.keys().next().value as string);
  }
}
