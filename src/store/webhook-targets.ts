import type { RunEvent } from "../domain/run-events.js";
import {
  type ResolvedWebhookTarget,
  StoredResolvedTargetSchema,
  StoredWebhookTargetSchema,
  type WebhookTarget,
} from "../domain/webhook.js";
import { LruTable } from "../lru-table.js";
import { parseOptionalJsonColumn } from "./json.js";

/** At most this many runs' targets are kept (the runs a store writes now); the least recently remembered go first. */
const MAX_KEPT = 10_000;

/** A run's stored target, with its session: what a delivery needs. */
export interface RunWebhookTarget {
  sessionId: string;
  url: string;
  events: string[];
}

/** A run's row as far as its target goes. */
export type TargetRow = { session_id: string; webhook: string | null };

/** The target stored on a run's row (`session_id`, `webhook`), or null when it has none. */
export function targetOfRow(row: { session_id: string; webhook: string | null }): RunWebhookTarget | null {
  const stored = parseOptionalJsonColumn(StoredWebhookTargetSchema, row.webhook, "run webhook");
  return stored ? { sessionId: row.session_id, ...stored } : null;
}

/** The target stored on a run's row as its start resolved it (see ResolvedWebhookTarget), or null when it has none. */
export const resolvedTargetOfRow = (row: TargetRow): ResolvedWebhookTarget | null =>
  parseOptionalJsonColumn(StoredResolvedTargetSchema, row.webhook, "run webhook");

/** A run's target as its record holds it, with its session: what its deliveries need. */
export const targetOfRun = (run: { sessionId: string; webhook: WebhookTarget | null }): RunWebhookTarget | null =>
  run.webhook ? { sessionId: run.sessionId, ...run.webhook } : null;

/**
 * The webhook targets of the runs a store writes, by run id. A run's target is fixed when it
 * is created, so one known from the created run (or read once) is right for the run's whole
 * life, and its later commits read nothing to derive their deliveries. Forgotten once the
 * run's end is written; bounded, for runs whose end another instance writes.
 */
export class RunTargets {
  /** By run id, each counting one: past MAX_KEPT the least recently remembered go (see lru-table.ts). */
  readonly #byRun = new LruTable<RunWebhookTarget | null>(MAX_KEPT);

  /** The run's target (null: it has none), or undefined when it is not known here. */
  known(runId: string): RunWebhookTarget | null | undefined {
    return this.#byRun.peek(runId);
  }

  remember(runId: string, target: RunWebhookTarget | null): void {
    this.#byRun.set(runId, target, 1);
  }

  /** The target of the run `row` was read for (kept; undefined or null: there is no such run). */
  read(runId: string, row: TargetRow | null | undefined): RunWebhookTarget | null {
    if (!row) return null;
    const target = targetOfRow(row);
    this.remember(runId, target);
    return target;
  }

  /** Forgets the runs whose end is among `events` (written, or about to be). */
  settle(events: readonly RunEvent[]): void {
    for (const event of events) if (event.type === "run.finished") this.#byRun.delete(event.runId);
  }
}
