/**
 * A run's own deadline for an unrenewed lease counts from when its lease was taken, not from
 * when this process finished setting the run up: a start whose history read was slow (a long
 * session, a slow disk) stopped its run only after the database's lease had expired, when a
 * peer may already have taken the run over.
 */
import { afterEach, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const LEASE_MS = 4000;
let server: TestServer | undefined;
let database: TestPgDatabase | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await database?.drop();
  database = undefined;
});

it("a run whose start read its history slowly stops, unrenewed, before its lease expires in the database", async () => {
  database = await createTestPgDatabase();
  let slowHistory = false;
  server = await startTestServer({
    pgUrl: database.url,
    env: { RUN_LEASE_MS: String(LEASE_MS) },
    wrapStore: (store: Store): Store => {
      // Renewals never answer (a partitioned owner); the start's history read takes half the lease.
      const partitioned: Store = {
        ...store,
        leases: { ...store.leases, renew: () => new Promise<never>(() => {}) },
      };
      return aroundStore(partitioned, "messages", (name, _args, call) =>
        name === "history" && slowHistory
          ? new Promise((resolve) => setTimeout(resolve, LEASE_MS / 2)).then(call)
          : call(),
      );
    },
  });
  const s = server;
  s.upstream.enqueue({ text: "never", gate: new Promise<void>(() => {}) });
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  slowHistory = true;
  // The lease is taken after this instant (by the run's insert) and expires LEASE_MS after it.
  const before = performance.now();
  const started = await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "hi" } });
  expect(started.status).toBe(201);
  const runId = started.body.id as string;
  let stoppedAt: number | null = null;
  while (performance.now() - before < LEASE_MS * 2) {
    if (!s.ctx.manager.executes(runId)) {
      stoppedAt = performance.now();
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  expect(stoppedAt).not.toBeNull();
  expect((stoppedAt as number) - before).toBeLessThan(LEASE_MS);
});
