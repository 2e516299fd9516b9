/**
 * Steering order across a cancel (README "Busy sessions: queue, interrupt or steer", `steer`:
 * "When the run ends before it, `input` starts a new run instead (as `enqueue` does: behind
 * any queued runs)"; and "no steered input is lost, and each makes one run").
 *
 * Seen from outside: a client steers "steer-1" into a running run (stored, its request waits),
 * then DELETEs the run (202, `cancelling`), then sends a second steer "steer-2" (after the 202).
 * The second steer finds the run ending, takes no input, and is queued as a run of its own. The
 * cancelled run's end queues "steer-1" (with its steer's time: ahead of "steer-2") before the
 * session's queue moves on. Before, that end left "steer-1" to its waiting request, the queue
 * started "steer-2"'s run first, and "steer-1" ran last. Here the cancelled run's final write is
 * held at a door so that the second steer lands in it, deterministically, on both stores.
 *
 * Expected: input steered first runs first: the session's user messages are
 * first, steer-1, steer-2.
 */
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import type { Store } from "../../src/store/store.js";
import { door, gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("a steer stored before a DELETE runs before a steer sent after the DELETE's 202", async () => {
    const finish = door();
    onTestFinished(() => finish.release());
    let target = "";
    server = await startTestServer({
      backend,
      wrapStore: (store: Store): Store => ({
        ...store,
        commitRun: async (runId, changes, events, fence) => {
          // The cancelled run's end (its `finish` write) waits at the door.
          if (runId === target && changes.some((c) => c.kind === "finish")) await finish.pass();
          return store.commitRun(runId, changes, events, fence);
        },
      }),
    });
    const s = server;
    const held = gate();
    s.upstream.enqueue({ text: "never", gate: held.wait });
    s.upstream.fallback = () => ({ text: "ok" });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const first = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "first" } })).body;
    target = first.id;

    // steer-1: stored on the running run; its request waits for the run to take it.
    const steer1 = s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "steer-1", ifBusy: "steer" } });
    await expect
      .poll(async () => (await s.ctx.store.inputs.pending(first.id)).map((i) => i.content), { timeout: 10_000 })
      .toEqual(["steer-1"]);

    const cancel = await s.request("DELETE", `/runs/${first.id}`);
    expect(cancel.status).toBe(202);
    // The run stopped and is writing its end: held here.
    await finish.arrived;

    // steer-2, after the 202.
    const steer2 = await s.request("POST", `/sessions/${session.id}/runs`, {
      body: { input: "steer-2", ifBusy: "steer" },
    });
    expect(steer2.status).toBe(201);

    finish.release();
    held.open();
    const answer1 = await steer1;
    expect(answer1.status).toBe(201);
    await finishedRun(s, first.id);
    await finishedRun(s, answer1.body.id);
    await finishedRun(s, steer2.body.id);

    const users = (await s.request("GET", `/sessions/${session.id}/messages?limit=100`)).body.items
      .filter((m: { role: string }) => m.role === "user")
      .map((m: { content: string }) => m.content);
    expect(users).toEqual(["first", "steer-1", "steer-2"]);
  }, 60_000);
});
