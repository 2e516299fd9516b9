import type { RunEvent } from "../../domain/run-events.js";
import type { Store } from "../store.js";
import type { ClaimQuery } from "../webhook-claims.js";
import { DROP_SETTLED_ORPHANS } from "../webhook-orphans.js";
import { type RunWebhookTarget, resolvedTargetOfRow, type TargetRow } from "../webhook-targets.js";
import { type DeliveryRow, deliveriesFor, deliveryFromRow } from "../webhooks.js";
import type { Statement } from "./pg-batch.js";
import { deliveriesPage } from "./pg-run-lists.js";

type Rows = <R extends Record<string, unknown>>(text: string, values?: unknown[]) => Promise<R[]>;

/** The INSERTs of the outbox rows `events` cause under `target`, for the batch that stores them. */
export function deliveryStatements(events: readonly RunEvent[], target: RunWebhookTarget | null): Statement[] {
  return deliveriesFor(events, target).map((d) => ({
    text: `INSERT INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at,
             created_at, owner) VALUES ($1, $2, $3, $4, $5, $6, 'pending', '[]', $7, $8,
             coalesce((SELECT owner FROM sessions WHERE id = $9), '')) ON CONFLICT DO NOTHING`,
    values: [d.id, d.run_id, d.event_seq, d.type, d.url, d.body, d.next_attempt_at, d.created_at, d.session_id],
  }));
}

/**
 * Opens a statement's WITH with `owners`: the owners of pending deliveries, one index probe
 * an owner (a skip scan over `owner`) however many deliveries each has, ended by a NULL row.
 */
const PENDING_OWNERS = `WITH RECURSIVE owners AS (
    (SELECT owner FROM webhook_deliveries WHERE status = 'pending' ORDER BY owner LIMIT 1)
    UNION ALL
    SELECT (SELECT d.owner FROM webhook_deliveries d WHERE d.status = 'pending' AND d.owner > o.owner
            ORDER BY d.owner LIMIT 1)
    FROM owners o WHERE o.owner IS NOT NULL
  )`;

/**
 * A claim in one statement: the owners with pending deliveries (one index probe each, a loose
 * scan of webhook_deliveries_owner_due), each owner's oldest due within its room (its limit,
 * `$4` unless `$5`/`$6` name another, less its count among `$5`/`$7`) from its range of that
 * index, `$3` of those leased: each owner's first before anyone's second, then the oldest, at
 * most `$9` of them the deliveries of the owners `$5`/`$8` confine.
 * `FOR UPDATE SKIP LOCKED`: two workers never take the same delivery.
 */
const CLAIM = `${PENDING_OWNERS}, rooms AS (
    SELECT o.owner, coalesce(b.lim, $4::int) - coalesce(b.n, 0) AS room, coalesce(b.confined, false) AS confined
    FROM owners o
    LEFT JOIN unnest($5::text[], $6::int[], $7::int[], $8::bool[]) AS b (owner, lim, n, confined) ON b.owner = o.owner
    WHERE o.owner IS NOT NULL
  ), candidates AS (
    SELECT d.id, d.next_attempt_at, d.rank, r.confined FROM rooms r CROSS JOIN LATERAL (
      SELECT l.id, l.next_attempt_at, row_number() OVER (ORDER BY l.next_attempt_at, l.id) AS rank FROM (
        SELECT id, next_attempt_at FROM webhook_deliveries
        WHERE status = 'pending' AND owner = r.owner AND next_attempt_at <= $1
        ORDER BY next_attempt_at, id LIMIT least(greatest(r.room, 0), $3) FOR UPDATE SKIP LOCKED
      ) l
    ) d
  ), picked AS (
    SELECT id FROM (
      SELECT id, rank, next_attempt_at, confined, count(*) FILTER (WHERE confined)
        OVER (ORDER BY rank, next_attempt_at, id ROWS UNBOUNDED PRECEDING) AS confined_nth
      FROM candidates
    ) c
    WHERE NOT confined OR confined_nth <= $9
    ORDER BY rank, next_attempt_at, id LIMIT $3
  )
  UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id IN (SELECT id FROM picked) RETURNING *`;

/** The claim's `$5`-`$8`: every owner a map or set of the query names, with its limit, busy count and whether confined. */
function ownerArrays({ limits, busy, confined }: ClaimQuery): [string[], (number | null)[], number[], boolean[]] {
  const owners = [...new Set([...(limits?.keys() ?? []), ...(busy?.keys() ?? []), ...(confined?.owners ?? [])])];
  return [
    owners.map((owner) => owner ?? ""),
    owners.map((owner) => limits?.get(owner) ?? null),
    owners.map((owner) => busy?.get(owner) ?? 0),
    owners.map((owner) => confined?.owners.has(owner) ?? false),
  ];
}

/**
 * Gives up each owner's pending deliveries past its oldest `$1` (by created_at, id): the owners
 * by the claim's loose scan, each counted from its range of webhook_deliveries_owner_due (at
 * most `$1 + 1` entries), and only an owner over the cap has its pending rows read and sorted.
 * Two instances giving up at once: the second finds the rows no longer pending.
 */
const GIVE_UP_PAST_CAP = `${PENDING_OWNERS}, over AS (
    SELECT o.owner FROM owners o
    WHERE o.owner IS NOT NULL AND (
      SELECT count(*) FROM (
        SELECT 1 FROM webhook_deliveries d WHERE d.status = 'pending' AND d.owner = o.owner LIMIT $1::int + 1
      ) c
    ) > $1::int
  ), past AS (
    SELECT p.id FROM over v CROSS JOIN LATERAL (
      SELECT d.id FROM webhook_deliveries d WHERE d.status = 'pending' AND d.owner = v.owner
      ORDER BY d.created_at, d.id OFFSET $1::int
    ) p
  )
  UPDATE webhook_deliveries w SET status = 'failed', reason = $2, finished_at = $3, next_attempt_at = NULL, body = ''
  WHERE w.id IN (SELECT id FROM past) AND w.status = 'pending'
  RETURNING w.owner`;

/** The outbox over PostgreSQL. */
export function pgWebhooks(rows: Rows, write: (statements: Statement[]) => Promise<unknown>): Store["webhooks"] {
  return {
    claim: async (query) =>
      (
        await rows<DeliveryRow & Record<string, unknown>>(CLAIM, [
          query.now,
          query.leaseUntil,
          Math.max(0, query.limit),
          query.perOwner,
          ...ownerArrays(query),
          Math.max(0, query.confined?.room ?? query.limit),
        ])
      )
        .map(deliveryFromRow)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)),
    release: async ({ id, leaseUntil, at }) => {
      await write([
        {
          text: `UPDATE webhook_deliveries SET next_attempt_at = $2
                 WHERE id = $1 AND status = 'pending' AND next_attempt_at = $3`,
          values: [id, at, leaseUntil],
        },
      ]);
    },
    postpone: async ({ owner, url, dueBy, at }) => {
      const [result] = (await write([
        {
          text: `UPDATE webhook_deliveries SET next_attempt_at = $4
                 WHERE owner = $1 AND url = $2 AND status = 'pending' AND next_attempt_at <= $3`,
          values: [owner ?? "", url, dueBy, at],
        },
      ])) as { rowCount: number | null }[];
      return result?.rowCount ?? 0;
    },
    expire: async ({ id, leaseUntil, reason, at }) => {
      const [result] = (await write([
        {
          text: `UPDATE webhook_deliveries SET status = 'failed', reason = $2, finished_at = $3, next_attempt_at = NULL
                 WHERE id = $1 AND status = 'pending' AND next_attempt_at = $4`,
          values: [id, reason, at, leaseUntil],
        },
        // Settled without its run (its session deleted), it goes (see webhook-orphans.ts).
        { text: DROP_SETTLED_ORPHANS },
      ])) as { rowCount: number | null }[];
      return (result?.rowCount ?? 0) > 0;
    },
    record: async ({ id, attempt, next }) => {
      const pending = next.status === "pending";
      await write([
        {
          // The SET expressions read the row as it was: only a pending one takes the outcome. The
          // attempt is appended to the JSON text as text: jsonb refuses `\u0000`, which an error may hold.
          text: `UPDATE webhook_deliveries SET attempts = CASE WHEN attempts ~ '^\\[\\s*\\]$' THEN '[' || $2 || ']'
                   ELSE left(rtrim(attempts), -1) || ',' || $2 || ']' END,
                   status = CASE WHEN status = 'pending' THEN $3 ELSE status END,
                   next_attempt_at = CASE WHEN status = 'pending' THEN $4 ELSE next_attempt_at END,
                   finished_at = CASE WHEN status = 'pending' THEN $5 ELSE finished_at END,
                   reason = CASE WHEN status = 'pending' THEN $6 ELSE reason END
                 WHERE id = $1`,
          values: [
            id,
            JSON.stringify(attempt),
            next.status,
            pending ? next.at : null,
            pending ? null : attempt.at,
            next.status === "failed" ? next.reason : null,
          ],
        },
        // Settled without its run (its session deleted), it goes (see webhook-orphans.ts).
        { text: DROP_SETTLED_ORPHANS },
      ]);
    },
    page: (query) => deliveriesPage(rows, query),
    nextDue: async () =>
      (
        await rows<{ at: number | null }>(
          "SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'",
        )
      )[0]?.at ?? null,
    targetOf: async (runId) => {
      const [row] = await rows<TargetRow>("SELECT session_id, webhook FROM runs WHERE id = $1", [runId]);
      return row ? resolvedTargetOfRow(row) : null;
    },
    giveUpPastCap: async ({ cap, reason, at }) => {
      const [result] = (await write([
        { text: GIVE_UP_PAST_CAP, values: [cap, reason, at] },
        { text: DROP_SETTLED_ORPHANS },
      ])) as {
        rows: { owner: string }[];
      }[];
      const given = new Map<string | null, number>();
      for (const { owner } of result?.rows ?? []) {
        const key = owner === "" ? null : owner;
        given.set(key, (given.get(key) ?? 0) + 1);
      }
      return given;
    },
  };
}
