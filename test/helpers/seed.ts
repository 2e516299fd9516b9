import { emptyStats } from "../../src/agent/stats.js";
import type { StopReason } from "../../src/agent/stop-reason.js";
import type { WebhookTarget } from "../../src/domain/webhook.js";
import { defaultRunLimits } from "../../src/store/runs.js";
import type { RunChange, RunRecord, SessionRecord, Store } from "../../src/store/store.js";
import { allDeliveries } from "./run-lists.js";

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

/**
 * A running run record with defaults, not yet inserted. A `webhook` that does not say whether
 * it is the server's default is a run's own (`serverDefault: false`).
 */
export function runRecord(
  overrides: Partial<Omit<RunRecord, "webhook">> & {
    id: string;
    sessionId: string;
    webhook?: (WebhookTarget & { serverDefault?: boolean }) | null;
  },
): RunRecord {
  const { webhook, ...rest } = overrides;
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
    ...rest,
    webhook: webhook ? { serverDefault: false, ...webhook } : null,
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

let seededDeliveries = 0;
/**
 * `count` runs, each in a new session of `owner` with one pending webhook delivery (its
 * run.started, to a placeholder URL), each event `gapMs` after the one before (claims and
 * the pending cap order deliveries by it, then by id, which follows the same order).
 */
export async function seedDeliveries(
  store: Store,
  {
    owner,
    count,
    gapMs = 0,
    url = "https://hooks.example.com/in",
  }: { owner: string | null; count: number; gapMs?: number; url?: string },
): Promise<{ runId: string; deliveryId: string }[]> {
  const webhook = { url, events: ["run.started" as const] };
  const seeded: { runId: string; deliveryId: string }[] = [];
  for (let i = 0; i < count; i++) {
    const n = String(++seededDeliveries).padStart(6, "0");
    const sessionId = `ses_dlv_${n}`;
    await seedSession(store, { id: sessionId, owner });
    const runId = `run_dlv_${n}`;
    await store.runs.create(runRecord({ id: runId, sessionId, webhook }), [
      { type: "run.started", runId, seq: 1, at: new Date().toISOString() },
    ]);
    const [delivery] = await allDeliveries(store, runId);
    seeded.push({ runId, deliveryId: delivery?.id as string });
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  return seeded;
}
