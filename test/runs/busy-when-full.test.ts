/**
 * A busy session's `enqueue`, and a steer whose run ended before taking its input, when the
 * server (MAX_CONCURRENT_RUNS) or the key (MAX_RUNS_PER_KEY) is at its limit: the run is
 * queued (201), as "when the server is full it stays queued" says, and the input runs once.
 * Before, both were refused 429 and the steer's input stayed on its ended run, where the next
 * pass over the queues ran it: a client retrying as told got it run twice.
 */
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close().catch(() => {});
});

const KEY = "busy-when-full-key-0123456789";

it("enqueue on a busy session while the server is at MAX_CONCURRENT_RUNS is queued (201), then runs", async () => {
  const server = await startTestServer({ env: { MAX_CONCURRENT_RUNS: "1" } });
  servers.push(server);
  const held = gate();
  server.upstream.enqueue({ text: "first answer", gate: held.wait }, { text: "second answer" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const first = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "first" } });
  expect(first.status).toBe(201);
  await until(
    () => server.upstream.requests.length,
    (n) => n === 1,
    "the first model request",
  );
  const queued = await server.request("POST", `/sessions/${session.id}/runs`, {
    body: { input: "second", ifBusy: "enqueue" },
  });
  held.open();
  expect({ status: queued.status, runStatus: queued.body.status }).toEqual({ status: 201, runStatus: "queued" });
  await finishedRun(server, first.body.id);
  expect((await finishedRun(server, queued.body.id)).stopReason).toBe("complete");
});

/**
 * A steer stored on session S's run, whose run then ends without taking it; the steer looks at
 * it only once `fill` has taken the last slot (another session's run): its start is at a limit.
 */
async function steerEndingAtLimit(env: Record<string, string>, auth: Record<string, string>) {
  const upstream: FakeUpstream = await startFakeUpstream();
  upstream.fallback = () => ({ text: "ok" });
  const hold = gate();
  let holding = true;
  const server = await startTestServer({
    upstream,
    env,
    wrapStore: (store) =>
      aroundStore(store, "inputs", (name, _args, call) => {
        if (name !== "pendingStatus") return call();
        return (async () => {
          const status = await call();
          if (status === "finished" && holding) await hold.wait;
          return status;
        })();
      }),
  });
  servers.push(server);
  const post = (path: string, body: unknown) => server.request("POST", path, { body, headers: auth });
  const finished = (runId: string) =>
    until(
      async () => (await server.request("GET", `/runs/${runId}`, { headers: auth })).body,
      (run) => run.status === "finished",
      `run ${runId} to finish`,
    );
  const [g1, g2] = [gate(), gate()];
  upstream.enqueue({ text: "one", gate: g1.wait }, { text: "other session", gate: g2.wait });
  const s = (await post("/sessions", {})).body;
  const b = (await post("/sessions", {})).body;
  const r1 = (await post(`/sessions/${s.id}/runs`, { input: "first" })).body;
  await until(
    () => upstream.requests.length,
    (n) => n === 1,
    "the first model request",
  );
  const steer = post(`/sessions/${s.id}/runs`, { input: "steered", ifBusy: "steer" });
  await until(
    () => server.ctx.store.inputs.pending(r1.id),
    (p) => p.length === 1,
    "the steered input stored",
  );
  g1.open();
  await finished(r1.id);
  await until(
    () => server.ctx.manager.liveCount,
    (n) => n === 0,
    "the slot given back",
  );
  const other = await post(`/sessions/${b.id}/runs`, { input: "busy elsewhere" });
  expect(other.status).toBe(201);
  holding = false;
  hold.open();
  const answer = await steer;
  const left = (await server.ctx.store.inputs.orphaned()).map((i) => i.content);
  expect({ status: answer.status, runStatus: answer.body.status, input: answer.body.input, left }).toEqual({
    status: 201,
    runStatus: "queued",
    input: "steered",
    left: [],
  });
  g2.open();
  await finished(other.body.id);
  // Run once the slot is free again; and a restart finds nothing more to run of it.
  expect((await finished(answer.body.id)).stopReason).toBe("complete");
  await server.close({ keepDir: true });
  const again = await startTestServer({ upstream, dir: server.dir, env });
  servers.push(again);
  const runs = (await again.request("GET", `/sessions/${s.id}/runs`, { headers: auth })).body.items as {
    input: string;
  }[];
  expect(runs.filter((r) => r.input === "steered")).toHaveLength(1);
}

it("a steer whose run ended first, with the server full at that moment, is answered 201 with its input queued, run once", async () => {
  await steerEndingAtLimit({ MAX_CONCURRENT_RUNS: "1" }, {});
});

it("a steer whose run ended first, with its key at MAX_RUNS_PER_KEY, is answered 201 with its input queued, run once", async () => {
  await steerEndingAtLimit({ AGENT_API_KEYS: KEY, MAX_RUNS_PER_KEY: "1" }, { authorization: `Bearer ${KEY}` });
});
