import type { RunEvent } from "../../domain/run-events.js";
import type { Store } from "../store.js";
import type { RunWebhookTarget } from "../webhook-targets.js";
import { type DeliveryRow, deliveriesFor, deliveryFromRow } from "../webhooks.js";
import type { Statement } from "./pg-batch.js";

type Rows = <R extends Record<string, unknown>>(text: string, values?: unknown[]) => Promise<R[]>;

/** The INSERTs of the outbox rows `events` cause under `target`, for the batch that stores them. */
export function deliveryStatements(events: readonly RunEvent[], target: RunWebhookTarget | null): Statement[] {
  return deliveriesFor(events, target).map((d) => ({
    text: `INSERT INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at,
             created_at) VALUES ($1, $2, $3, $4, $5, $6, 'pending', '[]', $7, $8) ON CONFLICT DO NOTHING`,
    values: [d.id, d.run_id, d.event_seq, d.type, d.url, d.body, d.next_attempt_at, d.created_at],
  }));
}

/**
 * The outbox over PostgreSQL. A claim is one statement: due rows are leased with
 * `FOR UPDATE SKIP LOCKED`, so two workers never take the same delivery.
 */
export function pgWebhooks(rows: Rows, write: (statements: Statement[]) => Promise<unknown>): Store["webhooks"] {
  return {
    claim: async ({ now, leaseUntil, limit }) =>
      (
        await rows<DeliveryRow & Record<string, unknown>>(
          `UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id IN (
             SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1
             ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
           RETURNING *`,
          [now, leaseUntil, limit],
        )
      )
        .map(deliveryFromRow)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)),
    record: async ({ id, attempt, next }) => {
      const pending = next.status === "pending";
      await write([
        {
          text: `UPDATE webhook_deliveries SET attempts = (attempts::jsonb || jsonb_build_array($2::jsonb))::text,
                   status = $3, next_attempt_at = $4, finished_at = $5 WHERE id = $1`,
          values: [id, JSON.stringify(attempt), next.status, pending ? next.at : null, pending ? null : attempt.at],
        },
      ]);
    },
    ofRun: async (runId) =>
      (
        await rows<DeliveryRow & Record<string, unknown>>(
          "SELECT * FROM webhook_deliveries WHERE run_id = $1 ORDER BY event_seq",
          [runId],
        )
      ).map(deliveryFromRow),
    nextDue: async () =>
      (
        await rows<{ at: number | null }>(
          "SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'",
        )
      )[0]?.at ?? null,
  };
}
