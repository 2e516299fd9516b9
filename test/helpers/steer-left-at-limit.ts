import { expect } from "vitest";
import type { Store } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { type FakeReply, type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { aroundStore } from "./store-around.js";
import { startTestServer, type TestServer } from "./test-server.js";
import { until } from "./until.js";

/** What steerLeftAtLimit set up: the server, the runs and the steer whose answer is held. */
export interface SteerLeftAtLimit {
  server: TestServer;
  upstream: FakeUpstream;
  post: (path: string, body: unknown) => ReturnType<TestServer["request"]>;
  /** A run as GET /runs/{id} answers it (with the setup's credentials). */
  runOf: (id: string) => Promise<{ id: string; status: string; stopReason: string | null; input: string }>;
  sessionS: { id: string };
  sessionB: { id: string };
  r1: { id: string };
  /** The run that took the last room (another session's), still answering its model. */
  r2: { id: string };
  /** Opens R2's model answer (and the further replies' gates, in order). */
  gates: { r2: () => void; more: (() => void)[] };
  /** The steer's answer, once `releaseSteer` let it look at its run's end. */
  steer: ReturnType<TestServer["request"]>;
  releaseSteer: () => void;
}

/**
 * A steer stored on session S's run R1, which then ends without taking it; its input is queued
 * as a run only once R2 (a run of another session) has taken the last room (MAX_CONCURRENT_RUNS,
 * or the key's MAX_RUNS_PER_KEY, as `env` sets): the run of it is then at a limit. `more`
 * replies (each gated) follow R1's and R2's; `wrapRuns` wraps the store's `runs` further.
 */
export async function steerLeftAtLimit({
  env,
  auth = {},
  more = [],
  wrapRuns,
}: {
  env: Record<string, string>;
  auth?: Record<string, string>;
  more?: FakeReply[];
  wrapRuns?: (name: string, args: unknown[], call: () => unknown) => unknown;
}): Promise<SteerLeftAtLimit> {
  const upstream = await startFakeUpstream();
  upstream.fallback = () => ({ text: "ok" });
  const hold = gate();
  let holding = true;
  const server = await startTestServer({
    upstream,
    env,
    wrapStore: (store: Store) => {
      // The input R1 left is queued (by R1's end, or the steer seeing it) only once R2 is admitted (one possible interleaving).
      const held = aroundStore(store, "inputs", (name, _args, call) => {
        if (name !== "leftOn") return call();
        return (async () => {
          if (holding) await hold.wait;
          return call();
        })();
      });
      return wrapRuns ? aroundStore(held, "runs", wrapRuns) : held;
    },
  });
  const post = (path: string, body: unknown) => server.request("POST", path, { body, headers: auth });
  const runOf = async (id: string) => (await server.request("GET", `/runs/${id}`, { headers: auth })).body;
  const [g1, g2] = [gate(), gate()];
  const moreGates = more.map(() => gate());
  upstream.enqueue(
    { text: "one", gate: g1.wait },
    { text: "other session", gate: g2.wait },
    ...more.map((reply, i) => ({ ...reply, gate: moreGates[i]?.wait })),
  );
  const sessionS = (await post("/sessions", {})).body;
  const sessionB = (await post("/sessions", {})).body;
  const r1 = (await post(`/sessions/${sessionS.id}/runs`, { input: "first" })).body;
  await until(
    () => upstream.requests.length,
    (n) => n === 1,
    "R1's model request",
  );
  const steer = post(`/sessions/${sessionS.id}/runs`, { input: "steered", ifBusy: "steer" });
  await until(
    () => server.ctx.store.inputs.pending(r1.id),
    (p) => p.length === 1,
    "the steered input stored",
  );
  g1.open();
  await until(
    async () => (await runOf(r1.id)).status,
    (status) => status === "finished",
    "R1 to finish",
  );
  await until(
    () => server.ctx.manager.liveCount,
    (n) => n === 0,
    "R1's slot given back",
  );
  const r2 = await post(`/sessions/${sessionB.id}/runs`, { input: "busy elsewhere" });
  expect(r2.status).toBe(201);
  return {
    server,
    upstream,
    post,
    runOf,
    sessionS,
    sessionB,
    r1,
    r2: r2.body,
    gates: { r2: () => g2.open(), more: moreGates.map((g) => () => g.open()) },
    steer,
    releaseSteer: () => {
      holding = false;
      hold.open();
    },
  };
}
