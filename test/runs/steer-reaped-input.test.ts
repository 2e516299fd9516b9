import { afterEach, expect, it } from "vitest";
import type { RunManager } from "../../src/runs/run-manager.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * A steer (with `headers`) sent while a run streams its last reply; the run ends without taking
 * the input, and a reaper pass (of any instance) queues that input as a run of its own: between
 * the run's end and the steer's start of it (`start`), or before the steer's look at its input
 * finds the run ended (`look`). Resolves with the steer's answer.
 */
async function steerWhoseInputIsReapedFirst(headers: Record<string, string> = {}, at: "start" | "look" = "start") {
  let manager: RunManager | undefined;
  let reapFirst = true;
  let reaped!: () => void;
  const reapDone = new Promise<void>((r) => (reaped = r));
  const reap = async () => {
    reapFirst = false;
    expect((await manager?.ownership.reap())?.requeuedInputs).toBe(1);
    reaped();
  };
  server = await startTestServer({
    backend: "postgres",
    wrapStore: (store) => ({
      ...store,
      runs: {
        ...store.runs,
        create: async (run, events, options) => {
          if (at === "start" && options?.takesInput !== undefined && reapFirst && manager) await reap();
          return store.runs.create(run, events, options);
        },
      },
      inputs: {
        ...store.inputs,
        // The run's end queues the input it left (see queueInputsLeftOn) only after the pass, when the pass comes at the look.
        leftOn: async (runId) => {
          if (at === "look" && reapFirst) await reapDone;
          return store.inputs.leftOn(runId);
        },
        pendingStatus: async (runId, id) => {
          const status = await store.inputs.pendingStatus(runId, id);
          if (at !== "look" || status !== "finished" || !reapFirst || !manager) return status;
          await reap();
          return store.inputs.pendingStatus(runId, id);
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
  const steer = (input: string) =>
    current.request("POST", `/sessions/${session.id}/runs`, { body: { input, ifBusy: "steer" }, headers });
  const steered = steer("one more thing");
  await until(
    () => current.ctx.store.inputs.pending(run.id),
    (p) => p.length === 1,
    "the input to be stored",
  );
  release();
  const res = await steered;
  expect(reapFirst).toBe(false);
  const inputs = async () =>
    (await current.request("GET", `/sessions/${session.id}/runs`)).body.items.map((r: { input: string }) => r.input);
  return { current, res, steer, inputs };
}

it("steer when the run ends first and a reaper pass queues the left input before the steer starts it: 201 with that run", async () => {
  const { current, res, inputs } = await steerWhoseInputIsReapedFirst();
  expect(res.status).toBe(201);
  expect(res.body.input).toBe("one more thing");
  expect((await finishedRun(current, res.body.id)).stopReason).toBe("complete");
  // One run was made of the input.
  expect((await inputs()).sort()).toEqual(["one more thing", "start"]);
});

it("a keyed steer whose left input a reaper pass queued as a run: its repeat is that run, and the key with other input is refused (409)", async () => {
  const { current, res, steer, inputs } = await steerWhoseInputIsReapedFirst({ "idempotency-key": "steer-left" });
  expect(res.status).toBe(201);
  const made = res.body.id as string;
  expect(res.body.input).toBe("one more thing");

  const other = await steer("something else entirely");
  expect(other.status).toBe(409);
  expect(other.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
  expect(other.body.error.details).toEqual({ runId: made, differs: ["input"] });
  const again = await steer("one more thing");
  expect(again.body.id).toBe(made);
  expect((await finishedRun(current, made)).stopReason).toBe("complete");
  expect((await inputs()).sort()).toEqual(["one more thing", "start"]);
});

it("an unkeyed steer whose run ended, its input queued by a reaper pass before the steer looked again: 201 with that run, not 202 with the ended one", async () => {
  const { current, res, inputs } = await steerWhoseInputIsReapedFirst({}, "look");
  expect({ status: res.status, input: res.body.input }).toEqual({ status: 201, input: "one more thing" });
  expect((await finishedRun(current, res.body.id)).stopReason).toBe("complete");
  expect((await inputs()).sort()).toEqual(["one more thing", "start"]);
});
