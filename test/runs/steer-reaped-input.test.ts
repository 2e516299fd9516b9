import { afterEach, expect, it } from "vitest";
import type { RunManager } from "../../src/runs/run-manager.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("steer when the run ends first and a reaper pass queues the left input before the steer starts it: 201 with that run", async () => {
  let manager: RunManager | undefined;
  let reapFirst = true;
  server = await startTestServer({
    backend: "postgres",
    wrapStore: (store) => ({
      ...store,
      runs: {
        ...store.runs,
        create: async (run, events, options) => {
          // A reaper pass (of any instance) comes between the run's end and this start.
          if (options?.takesInput !== undefined && reapFirst && manager) {
            reapFirst = false;
            expect((await manager.ownership.reap()).requeuedInputs).toBe(1);
          }
          return store.runs.create(run, events, options);
        },
      },
    }),
  });
  const current = server;
  manager = current.ctx.manager;
  let release!: () => void;
  current.upstream.enqueue(
    { text: "the last word", gate: new Promise<void>((r) => (release = r)) },
    { text: "answer to the steer" },
  );
  const session = (await current.request("POST", "/sessions", { body: {} })).body;
  const run = (await current.request("POST", `/sessions/${session.id}/runs`, { body: { input: "start" } })).body;
  await until(
    () => current.upstream.requests.length,
    (n) => n === 1,
    "the model request",
  );
  const steered = current.request("POST", `/sessions/${session.id}/runs`, {
    body: { input: "one more thing", ifBusy: "steer" },
  });
  await until(
    () => current.ctx.store.inputs.pending(run.id),
    (p) => p.length === 1,
    "the input to be stored",
  );
  release();
  const res = await steered;
  expect(reapFirst).toBe(false);
  expect(res.status).toBe(201);
  expect(res.body.input).toBe("one more thing");
  expect((await finishedRun(current, res.body.id)).stopReason).toBe("complete");
  // One run was made of the input.
  const runs = (await current.request("GET", `/sessions/${session.id}/runs`)).body.items;
  expect(runs.map((r: { input: string }) => r.input).sort()).toEqual(["one more thing", "start"]);
});
