import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * README: "`?wait=true` answers `{run, text}` when it ends", and over PostgreSQL what waits for a
 * run's end waits for it wherever it executes. A `?wait=true` start whose run a peer took over
 * (this instance was paused, or could not renew its lease) while this instance is still up and
 * accepting was answered at once with the run unfinished (`running`, no text): the wait looked
 * only at the run as left here. Now it goes on waiting for the end where the run executes.
 */
it("a ?wait=true start whose run a peer took over answers with the run's end, not while it still runs (postgres)", async () => {
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

  const onA = gate();
  const onB = gate();
  upstream.enqueue({ text: ["on a "], gate: onA.wait }, { text: ["the answer from b"], gate: onB.wait });
  const session = (await a.request("POST", "/sessions", { body: {} })).body.id as string;
  const waiting = a.request("POST", `/sessions/${session}/runs?wait=true`, { body: { input: "go" } });
  await until(
    async () => upstream.requests.length,
    (n) => n === 1,
    "A's model request",
  );
  const runId = (await client.query<{ id: string }>("SELECT id FROM runs WHERE session_id = $1", [session])).rows[0]
    ?.id as string;

  // A stalls past its lease (as if paused): B's reaper takes the run over and resumes it.
  await client.query("UPDATE runs SET lease_expires_at = 0 WHERE id = $1", [runId]);
  const reaped = await b.ctx.manager.ownership.reap();
  expect(reaped.resumed).toEqual([runId]);
  await until(
    async () => upstream.requests.length,
    (n) => n === 2,
    "B's model request",
  );
  // A notices at its next renewal: it stops the run (B executes it) and is still up and accepting.
  await a.ctx.manager.ownership.renew();
  await until(
    async () => a.ctx.manager.executes(runId),
    (executes) => !executes,
    "A to give the run up",
  );
  expect(a.ctx.manager.accepting).toBe(true);
  // B's model answers: the run ends on B.
  onB.open();
  onA.open();
  const answer = await waiting;
  expect({ status: answer.status, runStatus: answer.body?.run?.status, text: answer.body?.text }).toEqual({
    status: 200,
    runStatus: "finished",
    text: "the answer from b",
  });
});
