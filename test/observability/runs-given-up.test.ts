/**
 * A run this process gives up (another instance takes its lease) is decided and finished
 * there, not here. agent_approvals_pending used to stay up here for good: a pending approval
 * was settled only by an approval.resolved or a run.finished committed in this process (and
 * the run's record in the RunDigest, and its open invoke_agent span, were never dropped).
 * Now the gauge is read from the runs executed here: a run given up stops waiting here and
 * is no longer one of them.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
let database: TestPgDatabase | undefined;
let shared: ReturnType<typeof tempDir> | undefined;
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  await database?.drop();
  shared?.cleanup();
});

async function scrape(server: TestServer): Promise<Exposition> {
  return new Exposition(await (await fetch(`${server.url}/metrics`)).text());
}

it("a run taken over by another instance leaves no pending approval counted here", async () => {
  database = await createTestPgDatabase();
  shared = tempDir("obs-ws-");
  const env = { WORKSPACE_ROOT: join(shared.path, "ws") };
  const a = await startTestServer({ pgUrl: database.url, env: { ...env, INSTANCE_ID: "inst-a" } });
  servers.push(a);
  const { runId } = await runAwaitingApproval(a);
  expect((await scrape(a)).value("agent_approvals_pending")).toBe(1);

  // Instance inst-b takes the run over (as its lease's expiry would let it); inst-a gives it up.
  const [claimed] = await a.ctx.store.leases.claim({ owner: "inst-b", ttlMs: 60_000, limit: 10, scope: "all" });
  expect(claimed?.record.id).toBe(runId);
  // Its next renewal finds the lease gone (called now rather than waited for).
  await a.ctx.manager.ownership.renew();
  await until(
    () => a.ctx.manager.executes(runId),
    (executes) => !executes,
    "the run to be given up on inst-a",
  );
  // Given up here: its call no longer waits here.
  expect((await scrape(a)).value("agent_approvals_pending")).toBe(0);

  // inst-b starts, resumes its run, is given the decision and finishes the run.
  const b = await startTestServer({ pgUrl: database.url, env: { ...env, INSTANCE_ID: "inst-b" } });
  servers.push(b);
  b.upstream.enqueue({ text: "written" });
  await until(
    () => b.ctx.manager.executes(runId),
    (executes) => executes,
    "the run to be resumed on inst-b",
  );
  const decided = await b.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
  expect(decided.status).toBe(200);
  const finished = await until(
    async () => (await b.request("GET", `/runs/${runId}`)).body,
    (run) => run.status === "finished",
    "the run's end on inst-b",
  );
  expect(finished.stopReason).toBe("complete");
  expect((await scrape(b)).value("agent_approvals_pending")).toBe(0);

  // Summed over the instances, no call waits any more; inst-a still says one does.
  expect((await scrape(a)).value("agent_approvals_pending")).toBe(0);
});
