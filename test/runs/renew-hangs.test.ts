import { afterEach, expect, it } from "vitest";
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
  current.upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
  });
  const session = (await current.request("POST", "/sessions", { body: {} })).body;
  const run = (await current.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  await until(
    async () => (await current.request("GET", `/runs/${run.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
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
