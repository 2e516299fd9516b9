import { type Plan, planFromMessages } from "../agent/plan.js";
import type { RunView } from "../domain/run.js";
import { toAgentMessage } from "../domain/stored-message.js";
import { runView } from "../store/runs.js";
import type { RunRecord, Store } from "../store/store.js";

/** A run's plan, derived from its committed messages (so a restart or a replay sees the same plan). */
export async function planOfRun(store: Store, record: RunRecord): Promise<Plan | null> {
  if (!record.planning) return null;
  return planFromMessages((await store.messages.ofRun(record.sessionId, record.id)).map(toAgentMessage));
}

/** A run as stored (`known`: its record, read already), with its plan; null when there is no such run. */
export async function storedRunView(store: Store, runId: string, known?: RunRecord): Promise<RunView | null> {
  const record = known ?? (await store.runs.get(runId));
  return record ? runView(record, await planOfRun(store, record)) : null;
}

/** How many finished runs' plans a FinishedRunPlans keeps. */
const KEPT_PLANS = 1_000;

/**
 * Plans of runs, as planOfRun makes them, with those of finished runs kept: a finished run's
 * messages never change, so its plan is read once, not at every listing of its session's runs
 * (each a read of all the run's messages). The most recently made KEPT_PLANS are kept.
 */
export class FinishedRunPlans {
  readonly #kept = new Map<string, Plan | null>();

  async of(store: Store, record: RunRecord): Promise<Plan | null> {
    if (!record.planning) return null;
    if (record.status !== "finished") return planOfRun(store, record);
    if (this.#kept.has(record.id)) return this.#kept.get(record.id) ?? null;
    const plan = await planOfRun(store, record);
    if (this.#kept.size >= KEPT_PLANS) this.#kept.delete(this.#kept.keys().next().value as string);
    this.#kept.set(record.id, plan);
    return plan;
  }
}
