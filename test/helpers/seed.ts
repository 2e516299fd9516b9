import { emptyStats } from "../../src/agent/stats.js";
import type { StopReason } from "../../src/agent/stop-reason.js";
import { defaultRunLimits } from "../../src/store/runs.js";
import type { RunChange, RunRecord, SessionRecord, Store } from "../../src/store/store.js";

/** Inserts a session row with defaults; `overrides` set any field. */
export async function seedSession(
  store: Store,
  overrides: Partial<SessionRecord> & { id: string },
): Promise<SessionRecord> {
  const session: SessionRecord = {
    owner: null,
    system: null,
    model: null,
    tools: null,
    approval: null,
    workspace: overrides.id,
    workspaceShared: false,
    providerProfile: null,
    planning: false,
    metadata: null,
    webhook: null,
    createdAt: new Date().toISOString(),
    ...overrides,
  };
  await store.sessions.insert(session);
  return session;
}

/** A running run record with defaults, not yet inserted. */
export function runRecord(overrides: Partial<RunRecord> & { id: string; sessionId: string }): RunRecord {
  return {
    status: "running",
    stopReason: null,
    error: null,
    input: "hi",
    maxTurns: 5,
    contextMaxChars: null,
    stopDetail: null,
    ...defaultRunLimits(),
    stats: emptyStats(),
    createdAt: new Date().toISOString(),
    finishedAt: null,
    approval: null,
    idempotencyKey: null,
    webhook: null,
    ...overrides,
  };
}

/** The change that ends a run, as its finish writes it. */
export const finishChange = (stopReason: StopReason = "complete"): RunChange => ({
  kind: "finish",
  stopReason,
  stopDetail: null,
  error: null,
  stats: emptyStats(),
  finishedAt: new Date().toISOString(),
});
