import { afterEach, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("renewals that fail (PostgreSQL down, nobody took the run) stop it with a log saying so, not that another instance took it over", async () => {
  const logs = capturedLogs();
  let down = false;
  const refused = () => Promise.reject(new StorageError("unavailable", "connect ECONNREFUSED 127.0.0.1:5432"));
  server = await startTestServer({
    backend: "postgres",
    logger: logs.logger,
    env: { RUN_LEASE_MS: "600" },
    wrapStore: (store) => ({
      ...store,
      leases: {
        ...store.leases,
        renew: (terms) => (down ? refused() : store.leases.renew(terms)),
        claim: (query) => (down ? refused() : store.leases.claim(query)),
      },
    }),
  });
  const current = server;
  const { runId } = await runAwaitingApproval(current);
  down = true;
  await until(
    () => current.ctx.manager.executes(runId),
    (executes) => !executes,
    "the run to be stopped here",
  );
  const stopped = logs.lines.filter((line) => line.includes("stopped the run"));
  expect(stopped).toHaveLength(1);
  expect(stopped[0]).toContain("its lease could not be renewed in time");
  expect(logs.lines.join("")).not.toContain("another instance took it over");
});
