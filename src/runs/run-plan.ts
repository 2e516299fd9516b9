import { type Plan, planFromMessages } from "../agent/plan.js";
import { toAgentMessage } from "../domain/stored-message.js";
import type { RunRecord, Store } from "../store/store.js";

/** A run's plan, derived from its committed messages (so a restart or a replay sees the same plan). */
export async function planOfRun(store: Store, record: RunRecord): Promise<Plan | null> {
  if (!record.planning) return null;
  return planFromMessages((await store.messages.ofRun(record.sessionId, record.id)).map(toAgentMessage));
}
