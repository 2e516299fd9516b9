/**
 * A busy session's `enqueue`, and a steer whose run ended before taking its input, when the
 * server (MAX_CONCURRENT_RUNS) or the key (MAX_RUNS_PER_KEY) is at its limit: the run is
 * queued (201), as "when the server is full it stays queued" says, and the input runs once.
 * Before, both were refused 429 and the steer's input stayed on its ended run, where the next
 * pass over the queues ran it: a client retrying as told got it run twice.
 */
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { steerLeftAtLimit } from "../helpers/steer-left-at-limit.js";
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
 * it only once another session's run has taken the last room (see steerLeftAtLimit).
 */
async function steerEndingAtLimit(env: Record<string, string>, auth: Record<string, string>) {
  const {
    server,
    upstream,
    runOf,
    sessionS: s,
    r2: other,
    gates,
    steer,
    releaseSteer,
  } = await steerLeftAtLimit({
    env,
    auth,
  });
  servers.push(server);
  const finished = (runId: string) =>
    until(
      () => runOf(runId),
      (run) => run.status === "finished",
      `run ${runId} to finish`,
    );
  releaseSteer();
  const answer = await steer;
  const left = (await server.ctx.store.inputs.orphaned()).map((i) => i.content);
  expect({ status: answer.status, runStatus: answer.body.status, input: answer.body.input, left }).toEqual({
    status: 201,
    runStatus: "queued",
    input: "steered",
    left: [],
  });
  gates.r2();
  await finished(other.id);
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
