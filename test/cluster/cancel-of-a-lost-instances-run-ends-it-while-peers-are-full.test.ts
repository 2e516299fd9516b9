import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { allStarted } from "../helpers/instances.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * README: `DELETE /runs/{id}` answers 202 `cancelling`, "and `run.finished` with `aborted` always
 * follows"; a cancel stored for a run whose instance was lost is acted on by a peer's reaper
 * (test/cluster/cancelled-then-lost.test.ts). Over a SQLite file "a `DELETE` of a held run ends
 * it `aborted` at once". Over PostgreSQL the reaper claims nothing while its instance is at
 * MAX_CONCURRENT_RUNS (ownership.ts: `slots <= 0` breaks the pass), cancelled runs included: a
 * run whose instance died and whose cancel was answered 202 stays `cancelling` for as long as
 * every peer is busy, though ending it aborted needs no slot (it runs nothing). Its session
 * cannot be deleted meanwhile, and the run keeps counting towards its key's MAX_RUNS_PER_KEY.
 */
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it("a run cancelled on B after its instance A was lost ends aborted although B is at MAX_CONCURRENT_RUNS", async () => {
  const upstream: FakeUpstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const database = await createTestPgDatabase();
  cleanups.push(() => database.drop());
  const dir = tempDir("lost-cancel-");
  cleanups.push(() => dir.cleanup());
  const children: ChildServer[] = [];
  cleanups.push(async () => {
    for (const child of children) {
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
      await child.exited;
    }
  });
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  cleanups.push(() => client.end());
  const instance = async (name: string, env: Record<string, string> = {}) => {
    const child = await startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env: { DATABASE_URL: database.url, INSTANCE_ID: name, RUN_LEASE_MS: "1500", ...env },
      // A loaded CI machine may take longer than the default to start two servers at once.
      readyMs: 30_000,
    });
    children.push(child);
    return child;
  };
  const [a, b] = await allStarted([instance("a"), instance("b", { MAX_CONCURRENT_RUNS: "1" })]);
  // Every model request streams a little and then never finishes.
  upstream.fallback = () => ({ text: ["working "], gate: new Promise(() => {}) });
  cleanups.push(() => {
    upstream.fallback = undefined;
  });

  // B is busy with a run of its own (its one slot).
  const onB = await api(b.url, "POST", "/sessions", {});
  const busy = await api(b.url, "POST", `/sessions/${onB.body.id}/runs`, { input: "keep b busy" });
  expect(busy.status).toBe(201);
  // A executes the run to cancel, then is lost.
  const onA = await api(a.url, "POST", "/sessions", {});
  const started = await api(a.url, "POST", `/sessions/${onA.body.id}/runs`, { input: "on a" });
  expect(started.status).toBe(201);
  const runId = started.body.id as string;
  const watcher = await openSse(`${b.url}/runs/${runId}/events`);
  await watcher.waitFor((e) => e.event === "text.delta");
  a.process.kill("SIGKILL");
  await a.exited;

  const cancelled = await api(b.url, "DELETE", `/runs/${runId}`);
  expect(cancelled.status).toBe(202);
  expect(cancelled.body.status).toBe("cancelling");

  // run.finished (aborted) follows: bounded wait, well past the lease's expiry (1.5 s) and the reaper's passes.
  const end = await Promise.race([
    watcher.waitFor((e) => e.event === "run.finished"),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000).unref()),
  ]);
  const stored = await client.query<{ status: string; stop_reason: string | null }>(
    "SELECT status, stop_reason FROM runs WHERE id = $1",
    [runId],
  );
  watcher.close();
  expect({ streamed: end?.json.run.stopReason ?? null, stored: stored.rows[0] }).toEqual({
    streamed: "aborted",
    stored: { status: "finished", stop_reason: "aborted" },
  });
}, 60_000);
