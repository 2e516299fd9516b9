import pg from "pg";
import { afterEach, expect, it, vi } from "vitest";
import type { Store } from "../../src/store/store.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

/**
 * The owner's own view of its leases: it stops a run it could not renew at 0.9 of the lease
 * since its last renewal that succeeded, measured on a monotonic clock, before the database's
 * lease expires and a peer may take the run over.
 */
let server: TestServer | undefined;
let database: TestPgDatabase | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
  await database?.drop();
  database = undefined;
});

/** A server over a fresh database whose lease renewals (and claims) hang from `partition()` on, as for a partitioned owner. */
async function partitionable(leaseMs: number) {
  database = await createTestPgDatabase();
  let hang = false;
  let renewed = 0;
  const never = () => new Promise<never>(() => {});
  server = await startTestServer({
    pgUrl: database.url,
    env: { RUN_LEASE_MS: String(leaseMs) },
    wrapStore: (store: Store): Store => ({
      ...store,
      leases: {
        ...store.leases,
        renew: async (terms) => {
          if (hang) return never();
          const sentAt = wallNow();
          const leases = await store.leases.renew(terms);
          renewed = sentAt;
          return leases;
        },
        claim: (query) => (hang ? never() : store.leases.claim(query)),
      },
    }),
  });
  const current = server;
  const { runId } = await runAwaitingApproval(current);
  return {
    runId,
    partition: () => {
      hang = true;
    },
    executes: () => current.ctx.manager.executes(runId),
    /** When the last renewal that succeeded was sent (wall clock, unstepped). */
    renewedAt: () => renewed,
  };
}

/** Steps this process's wall clock (Date.now) by `ms` from now on, as NTP or a VM restore would. */
function stepWallClock(ms: number): void {
  const realNow = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + ms);
}

/** The wall clock in ms, as the host has it (a stepped Date.now aside). */
const wallNow = () => performance.timeOrigin + performance.now();

/** Polls `done` every 5 ms; resolves with the wall-clock time (unstepped) at which it first held, or null past `limitMs`. */
async function whenTrue(done: () => boolean, limitMs: number): Promise<number | null> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (done()) return wallNow();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return null;
}

it("a partitioned owner stops its run at least a tenth of the lease before the database's lease expires", async () => {
  const leaseMs = 3_000;
  const owner = await partitionable(leaseMs);
  // A renewal of the run's lease first: the lease row then holds the last one that succeeded.
  const started = wallNow();
  await until(owner.renewedAt, (at) => at > started, "a renewal");
  owner.partition();
  const stoppedAt = await whenTrue(() => !owner.executes(), leaseMs * 2);
  expect(stoppedAt).not.toBeNull();
  // The last renewal that reached the database (none does after the partition, nor a claim).
  const client = new pg.Client({ connectionString: database?.url });
  await client.connect();
  const expiresAt = Number(
    (await client.query("SELECT lease_expires_at FROM runs WHERE id = $1", [owner.runId])).rows[0].lease_expires_at,
  );
  await client.end();
  // 0.9 of the lease after the last renewal that succeeded was sent, which the database got
  // later, and timed its lease from: the run stopped well before a peer could claim it. (Half
  // of the margin is asked: the rest is the timers' and the poll's lateness.)
  const sinceRenewal = (stoppedAt as number) - owner.renewedAt();
  expect(sinceRenewal).toBeGreaterThanOrEqual(leaseMs * 0.9 - 5);
  expect(sinceRenewal).toBeLessThan(leaseMs * 0.95);
  expect(stoppedAt).toBeLessThan(expiresAt);
}, 20_000);

it("a wall clock stepped back does not keep a partitioned owner's run going past its lease", async () => {
  const leaseMs = 600;
  const owner = await partitionable(leaseMs);
  const partitionedAt = performance.now();
  owner.partition();
  stepWallClock(-60_000);
  expect(await whenTrue(() => !owner.executes(), leaseMs * 3)).not.toBeNull();
  expect(performance.now() - partitionedAt).toBeLessThan(leaseMs * 1.5);
});

it("a wall clock stepped forward does not stop a run whose leases are renewed", async () => {
  // Longer than the tests above: a renewal (a round trip to PostgreSQL) on a loaded machine may
  // take longer than 0.9 of 600 ms, which stops the run as it should; the 60 s step is far past either.
  const leaseMs = 1500;
  const owner = await partitionable(leaseMs);
  stepWallClock(60_000);
  // Several renewals' ticks, and several leases.
  expect(await whenTrue(() => !owner.executes(), leaseMs * 4)).toBeNull();
});
