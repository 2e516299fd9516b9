import { ownerRunsFull } from "./errors.js";
import type { StoredEvent } from "./events.js";
import type { LeaseTerms, RunLease } from "./leases.js";
import { startedEvent } from "./queue.js";
import type { RunRecord } from "./runs.js";
import type { sqliteTables } from "./sqlite-tables.js";
import { targetOfRun } from "./webhook-targets.js";

/**
 * Store.runs.startQueued over SQLite, inside the caller's write transaction (which makes it one
 * start, or one limited insert, at a time: the owner's count cannot change under it). Null when
 * the session has no queued run, has an active run or its queue is held; with `maxPerOwner`,
 * refused (`owner_runs`) when the session's owner has that many active runs already.
 */
export function startQueuedIn(
  tables: ReturnType<typeof sqliteTables>,
  { sessionId, at, terms, maxPerOwner }: { sessionId: string; at: string; terms: LeaseTerms; maxPerOwner?: number },
): { run: RunRecord; events: StoredEvent[]; lease: RunLease } | null {
  // The oldest queued run is read (whole) only once the session could start it.
  if (tables.runs.active(sessionId) || tables.queue.held(sessionId)) return null;
  const next = tables.queue.oldest(sessionId);
  if (!next) return null;
  const full = maxPerOwner ? tables.queue.ownerFull(sessionId, maxPerOwner) : null;
  if (full) throw ownerRunsFull(full);
  tables.queue.start(next.id);
  const lease = tables.leases.takeOver(next.id, terms);
  const events = [startedEvent(next.id, tables.events.lastSeq(next.id) + 1, at)];
  tables.webhooks.deriveFrom(events, { runId: next.id, target: targetOfRun(next) });
  return { run: { ...next, status: "running" as const }, events: tables.events.insert(events), lease };
}
