import { afterEach, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { runLeftLive } from "../helpers/left-run.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  for (const c of cleanups.splice(0)) await c();
});

/**
 * README (Durability): "No run is left `running` without an owner once the server is up."
 * Over a SQLite file the start-up claim is the only recovery (there is no reaper). Before, a
 * run whose recovery failed once (a transient read error) was logged and left `running`,
 * executed by nobody until the next restart: its session refused new runs (409). Now its
 * recovery is tried again, and a run that still cannot be recovered ends `error`.
 */

/** The store with its first `failures` reads of a run's last step failing (a disk I/O error). */
const lastStepFails = (failures: number) => {
  const tries = { failed: 0 };
  const wrapStore = (store: Store) =>
    aroundStore(store, "steps", (name, _args, call) => {
      if (name !== "last" || tries.failed >= failures) return call();
      tries.failed++;
      return Promise.reject(Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR" }));
    });
  return { tries, wrapStore };
};

it("a run whose recovery failed once is recovered again, not left running without an owner (sqlite)", async () => {
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const { dir, sessionId: session, runId } = await runLeftLive(upstream);
  // The restart: one read of the recovery fails, everything else works. The resumed run's model
  // answer waits (for the close): the run is seen executing here.
  upstream.enqueue({ text: "resumed", gate: new Promise(() => {}) });
  const { tries, wrapStore } = lastStepFails(1);
  const server = await startTestServer({ dir, upstream, wrapStore });
  servers.push(server);
  expect(tries.failed).toBe(1);

  const view = (await server.request("GET", `/runs/${runId}`)).body;
  const another = await server.request("POST", `/sessions/${session}/runs`, { body: { input: "next" } });
  // Recovered on a second try: executed here (the session busy with it), never ownerless.
  expect({
    status: view.status,
    executedHere: server.ctx.manager.executes(runId),
    another: another.status,
  }).toEqual({ status: "running", executedHere: true, another: 409 });
  await until(
    async () => upstream.requests.length,
    (n) => n === 2,
    "the resumed run's model request",
  );
});

it("a run whose recovery keeps failing ends error once the server is up, and its session takes new runs (sqlite)", async () => {
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const { dir, sessionId: session, runId } = await runLeftLive(upstream);
  const { tries, wrapStore } = lastStepFails(Number.POSITIVE_INFINITY);
  const server = await startTestServer({ dir, upstream, wrapStore });
  servers.push(server);

  const view = (await server.request("GET", `/runs/${runId}`)).body;
  upstream.enqueue({ text: "next answer" });
  const another = await server.request("POST", `/sessions/${session}/runs?wait=true`, { body: { input: "next" } });
  expect({
    tries: tries.failed,
    status: view.status,
    stopReason: view.stopReason,
    error: view.error?.code,
    another: another.status,
    anotherStop: another.body.run?.stopReason,
  }).toEqual({
    // Four recoveries, then the end's read of the last step to complete its trace (which fails
    // too: the end is written with the trace as it was).
    tries: 5,
    status: "finished",
    stopReason: "error",
    error: "PERSISTENCE_FAILED",
    another: 200,
    anotherStop: "complete",
  });
});
