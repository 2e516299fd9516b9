import { afterEach, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("renewals that never answer (a partitioned database) stop the runs once their lease may have expired", async () => {
  let hang = false;
  server = await startTestServer({
    backend: "postgres",
    env: { RUN_LEASE_MS: "600" },
    wrapStore: (store) => ({
      ...store,
      leases: {
        ...store.leases,
        renew: (terms) => (hang ? new Promise<never>(() => {}) : store.leases.renew(terms)),
        claim: (query) => (hang ? new Promise<never>(() => {}) : store.leases.claim(query)),
      },
    }),
  });
  const current = server;
  const run = { id: (await runAwaitingApproval(current)).runId };
  hang = true;
  const live = current.ctx.manager;
  expect(live.executes(run.id)).toBe(true);
  // Another instance may hold the run once its lease expires: nothing of it runs here then.
  await until(
    () => live.executes(run.id),
    (executes) => !executes,
    "the run to be stopped here",
  );
});
