/**
 * Steered input left on a run that ended is queued in the order it was steered (README "Busy
 * sessions": a steer whose run ends before taking its input starts a run "as `enqueue` does:
 * behind any queued runs"; a session's queue is "oldest first"; "no steered input is lost, and
 * each makes one run").
 *
 * Seen from outside: two steers, "steer-A" then "steer-B", are stored on a running run, and both
 * requests wait. The run is cancelled (DELETE, 202). Its end queues both inputs, in the order
 * they were steered, and each request answers 201 with the run made of its input. Before, the
 * end left each input to its waiting request, and whichever request's reads came back first got
 * its input run first (over PostgreSQL's pool, B often before A). Here A's read of its input's
 * state is held (a door) until B's request answered, deterministically, on both stores. (The
 * reaper's pass over left inputs, which would queue them in order, is held too so that it
 * cannot hide the race.)
 *
 * Expected: the session's user messages are first, steer-A, steer-B.
 */
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { door, gate } from "../fakes/gate.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("two steers waiting on a run that is cancelled run in the order they were steered", async () => {
    const aRead = door();
    const reaper = door();
    onTestFinished(() => {
      aRead.release();
      reaper.release();
    });
    let target = "";
    let inputA = "";
    let ended = false;
    server = await startTestServer({
      backend,
      wrapStore: (store: Store): Store => {
        const inputs = aroundStore(store, "inputs", async (name, args, call) => {
          // The first look at steer-A's input once the run's end is stored waits at the door.
          if (name === "pendingStatus" && ended && args[1] === inputA) await aRead.pass();
          if (name === "orphaned" && target !== "") await reaper.pass();
          return call();
        });
        return {
          ...inputs,
          commitRun: async (runId, changes, events, fence) => {
            const stored = await store.commitRun(runId, changes, events, fence);
            if (runId === target && changes.some((c) => c.kind === "finish")) ended = true;
            return stored;
          },
        };
      },
    });
    const s = server;
    const held = gate();
    s.upstream.enqueue({ text: "never", gate: held.wait });
    s.upstream.fallback = () => ({ text: "ok" });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const first = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "first" } })).body;
    target = first.id;

    const steer = (input: string) =>
      s.request("POST", `/sessions/${session.id}/runs`, { body: { input, ifBusy: "steer" } });
    const pending = async () => (await s.ctx.store.inputs.pending(first.id)).map((i) => i.content);
    const steerA = steer("steer-A");
    await expect.poll(pending, { timeout: 10_000 }).toEqual(["steer-A"]);
    inputA = (await s.ctx.store.inputs.pending(first.id))[0]?.id ?? "";
    const steerB = steer("steer-B");
    await expect.poll(pending, { timeout: 10_000 }).toEqual(["steer-A", "steer-B"]);

    expect((await s.request("DELETE", `/runs/${first.id}`)).status).toBe(202);
    held.open();
    await finishedRun(s, first.id);
    // steer-A's request is at the door; steer-B's makes its run meanwhile.
    await aRead.arrived;
    const answerB = await steerB;
    expect(answerB.status).toBe(201);
    aRead.release();
    const answerA = await steerA;
    expect(answerA.status).toBe(201);
    await finishedRun(s, answerA.body.id);
    await finishedRun(s, answerB.body.id);
    reaper.release();

    const users = (await s.request("GET", `/sessions/${session.id}/messages?limit=100`)).body.items
      .filter((m: { role: string }) => m.role === "user")
      .map((m: { content: string }) => m.content);
    expect(users).toEqual(["first", "steer-A", "steer-B"]);
  }, 30_000);
});
