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

/** A run as stored, with its plan; null when there is no such run. */
export async function storedRunView(store: Store, runId: string): Promise<RunView | null> {
  const record = await store.runs.get(runId);
  return record ? runView(record, await planOfRun(store, record)) : null;
}
