import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

/**
 * `agent_approvals_pending` counts the calls the runs executed here wait on a decision for,
 * read when scraped: B's reaper takes over a run of A (A stalled past its lease) that waits for
 * an approval; B executes the run and waits for that decision (GET /runs/{id}/approvals on B
 * lists it), so B's gauge counts it, and A's no longer does. (It was counted from the
 * `approval.requested` events a process committed itself: the taken-over call vanished.)
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const gauge = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("agent_approvals_pending "));
  return Number(line?.split(" ")[1]);
};

it("a run taken over while it awaits an approval is counted in the new owner's agent_approvals_pending", async () => {
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const database = await createTestPgDatabase();
  cleanups.push(() => database.drop());
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  cleanups.push(() => client.end());
  const a = await startTestServer({ upstream, pgUrl: database.url, env: { INSTANCE_ID: "inst-a" } });
  cleanups.push(() => a.close());
  const b = await startTestServer({ upstream, pgUrl: database.url, env: { INSTANCE_ID: "inst-b" } });
  cleanups.push(() => b.close());

  upstream.enqueue({ toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"x"}' }] });
  const session = (await a.request("POST", "/sessions", { body: {} })).body.id as string;
  const runId = (await a.request("POST", `/sessions/${session}/runs`, { body: { input: "go" } })).body.id as string;
  await until(
    async () => (await a.request("GET", `/runs/${runId}/approvals`)).body.items.length,
    (n) => n === 1,
    "the approval request",
  );
  expect(await gauge(a.url)).toBe(1);

  // A stalls past its lease: B's reaper takes the run over; A notices at its next renewal.
  await client.query("UPDATE runs SET lease_expires_at = 0 WHERE id = $1", [runId]);
  const reaped = await b.ctx.manager.ownership.reap();
  expect(reaped.resumed).toEqual([runId]);
  await a.ctx.manager.ownership.renew();
  await until(
    async () => a.ctx.manager.executes(runId),
    (executes) => !executes,
    "A to give the run up",
  );
  // The call waits for its decision on B.
  await until(
    async () => b.ctx.manager.executes(runId),
    (executes) => executes,
    "B to execute the run",
  );
  const pending = (await b.request("GET", `/runs/${runId}/approvals`)).body.items.map(
    (p: { toolCallId: string }) => p.toolCallId,
  );
  expect(pending).toEqual(["call_w"]);
  expect({ a: await gauge(a.url), b: await gauge(b.url) }).toEqual({ a: 0, b: 1 });

  // Decided: the run ends, nothing pending anywhere.
  upstream.enqueue({ text: "written" });
  expect((await b.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } })).status).toBe(
    200,
  );
  await until(
    async () => (await b.request("GET", `/runs/${runId}`)).body.status,
    (status) => status === "finished",
    "the run's end",
  );
}, 60_000);
