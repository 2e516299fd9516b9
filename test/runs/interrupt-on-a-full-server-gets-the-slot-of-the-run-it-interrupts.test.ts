/**
 * An interrupting start on a full server loses the slot of the run it interrupted to another
 * session's queued run: the client's active run is cancelled (ends `aborted`) and its new run is
 * then refused 429 TOO_MANY_RUNS.
 *
 * README, "Busy sessions", `interrupt`: the active run is cancelled "and once its end is stored
 * the new run starts"; only "when the server is full and the active run's end frees it no slot
 * (a run a restart holds for one, or one executing on another instance), nothing is cancelled:
 * 429". Here the interrupted run executes on this server, so its end frees a slot, and the new
 * run must get it (201): cancelling the user's run and then refusing the replacement loses work
 * and leaves the session idle, the one outcome the documented 429 rule exists to prevent.
 *
 * With MAX_CONCURRENT_RUNS=1: session A's run holds the one slot; session B's `enqueue` is queued
 * (201 `queued`, waiting for room). An `interrupt` on A cancels A's run; the slot its end gave
 * back started B's queued run (QueuedStarts.slotFreed, called by the registry before the
 * interrupting start's insert), and the interrupting start's admission found the server full.
 * (Over PostgreSQL the same race was lost or won by the store's round trips: seen both ways.)
 * The interrupted run's slot is now handed to the interrupting start (LiveRuns.handOver); B's
 * run starts once the new run has ended.
 */
import { afterEach, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Over SQLite (one process, the store's calls answered at once) the queued run won the slot every
// time; over PostgreSQL either could. The slot is now the interrupting start's on both.
describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("an interrupt on a full server, another session's run queued for room, starts its run (201) in the slot the interrupted run gives back", async () => {
    const s = await startTestServer({ backend, env: { MAX_CONCURRENT_RUNS: "1" } });
    server = s;
    const held = gate();
    s.upstream.enqueue({ text: "first answer", gate: held.wait });
    const a = (await s.request("POST", "/sessions", { body: {} })).body.id as string;
    const b = (await s.request("POST", "/sessions", { body: {} })).body.id as string;
    const first = await s.request("POST", `/sessions/${a}/runs`, { body: { input: "first" } });
    expect(first.status).toBe(201);
    await until(
      async () => s.upstream.requests.length,
      (n) => n === 1,
      "the first run's model request",
    );
    // The server is full: B's run waits for room.
    const queued = await s.request("POST", `/sessions/${b}/runs`, { body: { input: "in b", ifBusy: "enqueue" } });
    expect(queued.status).toBe(201);
    expect(queued.body.status).toBe("queued");

    s.upstream.fallback = () => ({ text: "an answer" });
    const now = await s.request("POST", `/sessions/${a}/runs`, { body: { input: "now", ifBusy: "interrupt" } });
    held.open();
    const interrupted = await finishedRun(s, first.body.id);
    expect(interrupted.stopReason).toBe("aborted");
    // The run was cancelled for this start: the start must have its run.
    expect({ status: now.status, code: now.body?.error?.code }).toEqual({ status: 201, code: undefined });
    await finishedRun(s, now.body.id);
    await finishedRun(s, queued.body.id);
  });
});
