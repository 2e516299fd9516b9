import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { RunEvent } from "../domain/run-events.js";
import type { ResolvedWebhookTarget } from "../domain/webhook.js";
import { carriesWebhook, webhookPayload } from "../domain/webhook-payload.js";
import type { Db } from "./database.js";
import { parseJsonColumn } from "./json.js";
import { type ClaimQuery, ownerKey, ownerRooms, pickClaimed } from "./webhook-claims.js";
import { SQLITE_DROP_SETTLED_ORPHANS } from "./webhook-orphans.js";
import { RunTargets, type RunWebhookTarget, resolvedTargetOfRow, type TargetRow } from "./webhook-targets.js";

/** One try of a delivery: the receiver's status code, or why there was none. */
export interface WebhookAttempt {
  at: string;
  statusCode: number | null;
  error: string | null;
}

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookDelivery {
  id: string;
  /** Null once its run is deleted (its session's delete): it is still sent, and dropped once settled. */
  runId: string | null;
  /** Its run's session's owner (null: the keyless server's): whose slots its sends take. */
  owner: string | null;
  type: string;
  url: string;
  body: string;
  status: WebhookDeliveryStatus;
  attempts: WebhookAttempt[];
  /** When the next try is due (ms since the epoch); null once delivered or failed. */
  nextAttemptAt: number | null;
  createdAt: string;
  finishedAt: string | null;
  /** Why it failed (its window ended, its target was refused, it was given up at the cap); null unless failed. */
  reason: string | null;
}

export interface DeliveryRow {
  id: string;
  run_id: string | null;
  /** '' for no owner: the column is NOT NULL, so an owner's range of the index is an equality. */
  owner: string;
  type: string;
  url: string;
  body: string;
  status: WebhookDeliveryStatus;
  attempts: string;
  next_attempt_at: number | null;
  created_at: string;
  finished_at: string | null;
  reason: string | null;
}

const AttemptsSchema = z.array(
  z.object({ at: z.string(), statusCode: z.number().nullable(), error: z.string().nullable() }),
);

export function deliveryFromRow(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    runId: row.run_id,
    owner: row.owner === "" ? null : row.owner,
    type: row.type,
    url: row.url,
    body: row.body,
    status: row.status,
    attempts: parseJsonColumn(AttemptsSchema, row.attempts, `webhook delivery ${row.id} attempts`),
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    reason: row.reason ?? null,
  };
}

/** A delivery as its run's listing shows it (of a run, so with its id): without its body, which is not read. */
export type WebhookListing = Omit<WebhookDelivery, "body" | "runId"> & { runId: string };

/** The columns of a listing: every one but the body (a payload that may hold a run's view, its input of 1 MB with it). */
export const LISTED_COLUMNS =
  "id, run_id, owner, type, url, status, attempts, next_attempt_at, created_at, finished_at, reason";

export function listingFromRow(row: Omit<DeliveryRow, "body" | "run_id"> & { run_id: string }): WebhookListing {
  const { body: _body, ...listing } = deliveryFromRow({ ...row, body: "" });
  return { ...listing, runId: row.run_id };
}

/** The outcome of one try, as the worker records it. */
export interface AttemptOutcome {
  id: string;
  attempt: WebhookAttempt;
  /** `pending` with the next try's time, or the delivery's end (a failure with its reason). */
  next: { status: "pending"; at: number } | { status: "delivered" } | { status: "failed"; reason: string };
}

/** A delivery's `webhook-id`: unique, stable across its retries. */
const deliveryId = (): string => `msg_${randomUUID().replaceAll("-", "")}`;

/** The outbox rows `events` cause under `target` (none without one), due at once. */
export function deliveriesFor(
  events: readonly RunEvent[],
  target: RunWebhookTarget | null,
): {
  id: string;
  run_id: string;
  /** The run's session, whose owner the row records. */
  session_id: string;
  event_seq: number;
  type: string;
  url: string;
  body: string;
  next_attempt_at: number;
  created_at: string;
}[] {
  if (!target) return [];
  const rows = [];
  for (const event of events) {
    if (!carriesWebhook(event.type) || !target.events.includes(event.type)) continue;
    const payload = webhookPayload(event, target.sessionId);
    if (!payload) continue;
    rows.push({
      id: deliveryId(),
      run_id: event.runId,
      session_id: target.sessionId,
      event_seq: event.seq,
      type: payload.type,
      url: target.url,
      body: JSON.stringify(payload),
      next_attempt_at: Date.now(),
      created_at: event.at,
    });
  }
  return rows;
}

/** What `Store["webhooks"]["giveUpPastCap"]` gives up: each owner's pending past its oldest `cap`. */
export interface PastCapQuery {
  cap: number;
  reason: string;
  /** Their `finishedAt`. */
  at: string;
}

/** The outbox of webhook deliveries. */
export function webhookStore(db: Db) {
  const targetOf = db.prepare("SELECT session_id, webhook FROM runs WHERE id = ?");
  const targets = new RunTargets();
  const insert = db.prepare(
    `INSERT OR IGNORE INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts,
       next_attempt_at, created_at, owner) VALUES (?, ?, ?, ?, ?, ?, 'pending', '[]', ?, ?,
       coalesce((SELECT owner FROM sessions WHERE id = ?), ''))`,
  );
  // At most `cap + 1` entries of the owner's range of webhook_deliveries_owner_due are read.
  const pendingOf = db.prepare(
    "SELECT count(*) AS n FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND owner = +? LIMIT +?)",
  );
  // The owner's pending past its oldest `cap` (its whole range read and sorted: only when over).
  const giveUp = db.prepare(
    `UPDATE webhook_deliveries SET status = 'failed', reason = +?, finished_at = +?, next_attempt_at = NULL, body = ''
     WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND owner = +?
                  ORDER BY created_at, id LIMIT -1 OFFSET +?)`,
  );
  // The owners with pending deliveries, one index probe each (there are as many as API keys).
  const firstOwner = db.prepare("SELECT owner FROM webhook_deliveries WHERE status = 'pending' ORDER BY owner LIMIT 1");
  const nextOwner = db.prepare(
    "SELECT owner FROM webhook_deliveries WHERE status = 'pending' AND owner > +? ORDER BY owner LIMIT 1",
  );
  const dueOf = db.prepare(
    `SELECT * FROM webhook_deliveries WHERE status = 'pending' AND owner = +? AND next_attempt_at <= +?
     ORDER BY next_attempt_at, id LIMIT +?`,
  );
  const lease = db.prepare("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ?");
  const byId = db.prepare("SELECT * FROM webhook_deliveries WHERE id = ?");
  const record = db.prepare(
    "UPDATE webhook_deliveries SET attempts = ?, status = ?, next_attempt_at = ?, finished_at = ?, reason = ? WHERE id = ?",
  );
  const recordAttempt = db.prepare("UPDATE webhook_deliveries SET attempts = ? WHERE id = ?");
  const release = db.prepare(
    "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ? AND status = 'pending' AND next_attempt_at = ?",
  );
  const postpone = db.prepare(
    `UPDATE webhook_deliveries SET next_attempt_at = ?
     WHERE owner = ? AND url = ? AND status = 'pending' AND next_attempt_at <= ?`,
  );
  const expire = db.prepare(
    `UPDATE webhook_deliveries SET status = 'failed', reason = ?, finished_at = ?, next_attempt_at = NULL
     WHERE id = ? AND status = 'pending' AND next_attempt_at = ?`,
  );
  const nextDue = db.prepare("SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'");
  const dropSettledOrphans = db.prepare(SQLITE_DROP_SETTLED_ORPHANS);

  /** The owners with pending deliveries, in order. */
  const pendingOwners = (): string[] => {
    const owners: string[] = [];
    for (let row = firstOwner.get() as { owner: string } | undefined; row; row = nextOwner.get(row.owner) as typeof row)
      owners.push(row.owner);
    return owners;
  };

  return {
    /**
     * Writes a delivery for each event its run's target asked for; call inside the transaction
     * that stores the events. `created`: the target of the run these events start (it is
     * remembered); otherwise a target not remembered is read, only for events a webhook may carry.
     */
    deriveFrom(events: readonly RunEvent[], created?: { runId: string; target: RunWebhookTarget | null }): number {
      if (created) targets.remember(created.runId, created.target);
      const first = events.find((event) => carriesWebhook(event.type));
      if (!first) return 0;
      const known = targets.known(first.runId);
      const target =
        known !== undefined ? known : targets.read(first.runId, targetOf.get(first.runId) as TargetRow | undefined);
      targets.settle(events);
      const rows = deliveriesFor(events, target);
      for (const d of rows) {
        insert.run(d.id, d.run_id, d.event_seq, d.type, d.url, d.body, d.next_attempt_at, d.created_at, d.session_id);
      }
      return rows.length;
    },
    /**
     * Claims due deliveries as `Store["webhooks"]["claim"]` says: each owner's oldest within its
     * room, then the oldest of those; each leased until `leaseUntil` (a crash mid-send retries it then).
     */
    claim(query: ClaimQuery): WebhookDelivery[] {
      const owners = pendingOwners();
      // Each owner's first before anyone's second (then the oldest): an owner with an older
      // backlog does not take every slot that frees while others' hold the rest.
      const candidates: { row: DeliveryRow; rank: number }[] = [];
      for (const [owner, room] of ownerRooms(owners, query)) {
        const due = dueOf.all(owner, query.now, Math.min(room, query.limit)) as DeliveryRow[];
        candidates.push(...due.map((row, rank) => ({ row, rank })));
      }
      const rows = pickClaimed(candidates, query).map(deliveryFromRow);
      for (const row of rows) lease.run(query.leaseUntil, row.id);
      return rows.map((row) => ({ ...row, nextAttemptAt: query.leaseUntil }));
    },
    /** As `Store["webhooks"]["record"]` says. */
    record({ id, attempt, next }: AttemptOutcome): void {
      const row = byId.get(id) as DeliveryRow | undefined;
      if (!row) return;
      const attempts = [...deliveryFromRow(row).attempts, attempt];
      if (row.status !== "pending") {
        recordAttempt.run(JSON.stringify(attempts), id);
        return;
      }
      const pending = next.status === "pending";
      const reason = next.status === "failed" ? next.reason : null;
      record.run(
        JSON.stringify(attempts),
        next.status,
        pending ? next.at : null,
        pending ? null : attempt.at,
        reason,
        id,
      );
      if (!pending && row.run_id === null) dropSettledOrphans.run();
    },
    /** As `Store["webhooks"]["release"]` says. */
    release({ id, leaseUntil, at }: { id: string; leaseUntil: number; at: number }): void {
      release.run(at, id, leaseUntil);
    },
    /** As `Store["webhooks"]["postpone"]` says. */
    postpone({ owner, url, dueBy, at }: { owner: string | null; url: string; dueBy: number; at: number }): number {
      return postpone.run(at, owner ?? "", url, dueBy).changes;
    },
    /** As `Store["webhooks"]["expire"]` says. */
    expire({ id, leaseUntil, reason, at }: { id: string; leaseUntil: number; reason: string; at: string }): boolean {
      const expired = expire.run(reason, at, id, leaseUntil).changes > 0;
      if (expired) dropSettledOrphans.run();
      return expired;
    },
    /** As `Store["webhooks"]["targetOf"]` says. */
    targetOf(runId: string): ResolvedWebhookTarget | null {
      const row = targetOf.get(runId) as TargetRow | undefined;
      return row ? resolvedTargetOfRow(row) : null;
    },
    /** When the earliest pending delivery is due, or null when none is. */
    nextDue(): number | null {
      return (nextDue.get() as { at: number | null }).at;
    },
    /** As `Store["webhooks"]["giveUpPastCap"]` says. */
    giveUpPastCap({ cap, reason, at }: PastCapQuery): Map<string | null, number> {
      const given = new Map<string | null, number>();
      for (const owner of pendingOwners()) {
        if ((pendingOf.get(owner, cap + 1) as { n: number }).n <= cap) continue;
        const { changes } = giveUp.run(reason, at, owner, cap);
        if (changes) given.set(ownerKey(owner), changes);
      }
      if (given.size) dropSettledOrphans.run();
      return given;
    },
  };
}

export type WebhookStore = ReturnType<typeof webhookStore>;
