import type { Db } from "./database.js";
import { type RunRecord, type RunRow, runFromRow } from "./runs.js";

/**
 * What an instance holds of a live run it executes: the right to write it, as long as the
 * run's `epoch` is still this one (a claim by another instance bumps it) and it is still the
 * run's owner. Every write of the run names it (see Store.commitRun) and is refused
 * (StoreConflictError `fenced`) once it no longer holds. Immutable: the SQLite store
 * remembers a lease found to hold by object (see `held` in leaseStore).
 */
export interface RunLease {
  readonly runId: string;
  readonly owner: string;
  readonly epoch: number;
}

/** A lease taken for `ttlMs` from now, on the database's clock, by `owner` (an instance id). */
export interface LeaseTerms {
  owner: string;
  ttlMs: number;
}

/**
 * Which runs a claim takes: `expired` (no owner, or a lease past its expiry), `expired+own`
 * (also runs `owner` holds: at start, when an instance with a stable id was restarted, its
 * runs are its own again at once), `all` (every live run: the one process of a database no
 * other process can open).
 */
export type ClaimScope = "expired" | "expired+own" | "all";

/**
 * What a claim takes: up to `limit` runs in `scope`, none of `except` (runs the claimer
 * executes); with `cancelled`, only the runs with a cancel requested (status `cancelling`:
 * `true`) or only the others (`false`).
 */
export interface RunClaimQuery extends LeaseTerms {
  limit: number;
  scope: ClaimScope;
  except?: readonly string[];
  cancelled?: boolean;
}

export interface ClaimedRun {
  record: RunRecord;
  lease: RunLease;
}

/** A run that is claimable: live (not finished, not waiting in a queue). */
export const CLAIMABLE_STATUS = "status NOT IN ('finished', 'queued')";

/** A run with a cancel requested (see RunClaimQuery.cancelled). */
export const CANCELLED_STATUS = "status = 'cancelling'";

/** Now in ms since the epoch, in SQLite. */
export const NOW_MS = "((julianday('now') - 2440587.5) * 86400000.0)";

export function leaseStore(db: Db) {
  const take = db.prepare(
    `UPDATE runs SET owner_instance = @owner, epoch = 1, lease_expires_at = ${NOW_MS} + @ttl WHERE id = @id`,
  );
  const takeOver = db.prepare(
    `UPDATE runs SET owner_instance = @owner, epoch = epoch + 1, lease_expires_at = ${NOW_MS} + @ttl
     WHERE id = @id RETURNING epoch`,
  );
  const renew = db.prepare(
    `UPDATE runs SET lease_expires_at = ${NOW_MS} + @ttl
     WHERE owner_instance = @owner AND id IN (SELECT value FROM json_each(@ids))
     RETURNING id, epoch`,
  );
  const claimable = db.prepare(
    `SELECT id FROM runs WHERE ${CLAIMABLE_STATUS} AND (+@all = 1 OR owner_instance IS NULL
       OR lease_expires_at IS NULL OR lease_expires_at < ${NOW_MS} OR (+@own = 1 AND owner_instance = +@owner))
       AND id NOT IN (SELECT value FROM json_each(+@except))
       AND (+@cancelled IS NULL OR (${CANCELLED_STATUS}) = +@cancelled)
     ORDER BY id LIMIT +@limit`,
  );
  const claim = db.prepare(
    `UPDATE runs SET owner_instance = @owner, epoch = epoch + 1, lease_expires_at = ${NOW_MS} + @ttl
     WHERE id = @id RETURNING *`,
  );
  const release = db.prepare(
    `UPDATE runs SET owner_instance = NULL, lease_expires_at = NULL
     WHERE owner_instance = @owner AND status <> 'finished'`,
  );
  const holds = db.prepare("SELECT 1 FROM runs WHERE id = ? AND epoch = ? AND owner_instance = ?");
  /**
   * Leases found to hold. This connection is the file's only writer (see openDatabase), and a
   * lease stops holding only through a statement of this store (a claim, a takeover, a
   * release) or the deletion of its run: each of those forgets them all (`forget`), so a lease
   * found here holds in the database too. Kept by object: a run's writes name the one lease
   * object of its recorder, so the fence of a commit is one lookup; an equal lease in another
   * object is looked up in the database once. Weakly held: a lease goes with its run.
   */
  let held = new WeakSet<RunLease>();
  const forget = () => {
    held = new WeakSet();
  };
  const leaseOf = (row: { id: string; epoch: number }, owner: string): RunLease => ({
    runId: row.id,
    owner,
    epoch: row.epoch,
  });

  return {
    /** Makes `owner` the first holder of a run just inserted (epoch 1), in the insert's transaction. */
    take(runId: string, terms: LeaseTerms): RunLease {
      take.run({ id: runId, owner: terms.owner, ttl: terms.ttlMs });
      return { runId, owner: terms.owner, epoch: 1 };
    },
    /** Makes `owner` the holder of a run it starts (a queued one), at the next epoch. */
    takeOver(runId: string, terms: LeaseTerms): RunLease {
      forget();
      const { epoch } = takeOver.get({ id: runId, owner: terms.owner, ttl: terms.ttlMs }) as { epoch: number };
      return { runId, owner: terms.owner, epoch };
    },
    renew(terms: LeaseTerms & { runIds: readonly string[] }): RunLease[] {
      return (
        renew.all({ owner: terms.owner, ttl: terms.ttlMs, ids: JSON.stringify(terms.runIds) }) as {
          id: string;
          epoch: number;
        }[]
      ).map((row) => leaseOf(row, terms.owner));
    },
    claim(query: RunClaimQuery): ClaimedRun[] {
      forget();
      const ids = claimable.all({
        owner: query.owner,
        limit: query.limit,
        except: JSON.stringify(query.except ?? []),
        all: query.scope === "all" ? 1 : 0,
        own: query.scope === "expired+own" ? 1 : 0,
        cancelled: query.cancelled === undefined ? null : Number(query.cancelled),
      }) as { id: string }[];
      return ids.map(({ id }) => {
        const row = claim.get({ id, owner: query.owner, ttl: query.ttlMs }) as RunRow & { epoch: number };
        return { record: runFromRow(row), lease: leaseOf(row, query.owner) };
      });
    },
    release(owner: string): number {
      forget();
      return release.run({ owner }).changes;
    },
    /** Whether `lease` still holds (inside a write's transaction: the fence). */
    holds(lease: RunLease): boolean {
      if (held.has(lease)) return true;
      if (holds.get(lease.runId, lease.epoch, lease.owner) === undefined) return false;
      held.add(lease);
      return true;
    },
    /** To call when runs are deleted: no lease is known to hold any more. */
    forget,
  };
}

export type LeaseStore = ReturnType<typeof leaseStore>;
