/**
 * An enqueue landing while an interrupting start is between the interrupted run's end and its
 * own insert: the session was idle with nothing queued, so the enqueue started its run at once,
 * and the interrupting start, having cancelled the active run, was answered 409 SESSION_BUSY.
 * The interrupting start holds the session's queue; the enqueue now yields to it: stored
 * queued, it runs after the interrupting start's run.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/store/store.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(["sqlite", "postgres"] as const)("an interrupt and an enqueue at once on %s", (backend) => {
  it("the interrupting start gets the session; the enqueued run is queued behind it, not started in its place", async () => {
    // The interrupting start's insert waits here until the test lets it go on.
    let insertReached!: () => void;
    const reached = new Promise<void>((resolve) => {
      insertReached = resolve;
    });
    let letInsert!: () => void;
    const insert = new Promise<void>((resolve) => {
      letInsert = resolve;
    });
    server = await startTestServer({
      backend,
      wrapStore: (store) =>
        aroundStore(store, "runs", (name, args, call) => {
          const run = args[0] as RunRecord | undefined;
          if (name !== "create" || run?.input !== "interrupting" || run.status !== "running") return call();
          insertReached();
          return insert.then(call);
        }),
    });
    const s = server;
    let releaseFirst!: () => void;
    s.upstream.enqueue({ text: "first", gate: new Promise<void>((resolve) => (releaseFirst = resolve)) });
    s.upstream.fallback = () => ({ text: "answered" });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const first = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "first" } })).body;
    await until(
      async () => s.upstream.requests.length,
      (n) => n === 1,
      "the first run's model request",
    );
    const interrupting = s.request("POST", `/sessions/${session.id}/runs`, {
      body: { input: "interrupting", ifBusy: "interrupt" },
    });
    await reached;
    // The first run has ended (aborted); the interrupting run is not stored yet.
    expect((await finishedRun(s, first.id)).stopReason).toBe("aborted");
    const enqueued = await s.request("POST", `/sessions/${session.id}/runs`, {
      body: { input: "enqueued", ifBusy: "enqueue" },
    });
    letInsert();
    releaseFirst();
    const interrupted = await interrupting;
    expect(interrupted.status).toBe(201);
    expect(enqueued.status).toBe(201);
    expect(enqueued.body.status).toBe("queued");
    const [mine, theirs] = [await finishedRun(s, interrupted.body.id), await finishedRun(s, enqueued.body.id)];
    expect(mine.stopReason).toBe("complete");
    expect(theirs.stopReason).toBe("complete");
    const asked = s.upstream.requests.map(
      (r) => r.body.messages.filter((m: { role: string }) => m.role === "user").at(-1)?.content,
    );
    expect(asked).toEqual(["first", "interrupting", "enqueued"]);
  });
});
