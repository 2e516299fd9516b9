/**
 * Two interrupting starts of one busy session at once: both cancel the active run and wait for
 * its end, then both insert, and the one-active rule refuses the later insert. That start was
 * answered 409 SESSION_BUSY, though README gives 409 only for `reject`. It now interrupts the
 * run that beat it to the insert and tries again (last interrupt wins): both are answered 201,
 * the earlier run ends `aborted` as interrupted, and the later one goes on. The order is made
 * deterministic by holding the insert of start A until start B's has been answered.
 */
import { afterEach, describe, expect, it } from "vitest";
import { INTERRUPTED_BY } from "../../src/runs/interrupt.js";
import type { RunRecord } from "../../src/store/store.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(["sqlite", "postgres"] as const)("two interrupting starts at once on %s", (backend) => {
  it("the start whose insert lost interrupts the winner's run and starts: both 201, the last run goes on, its key replays it", async () => {
    let bInserted!: () => void;
    const bIn = new Promise<void>((resolve) => {
      bInserted = resolve;
    });
    let aHeld = false;
    server = await startTestServer({
      backend,
      wrapStore: (store) =>
        aroundStore(store, "runs", (name, args, call) => {
          const run = args[0] as RunRecord | undefined;
          if (name !== "create" || run?.status !== "running") return call();
          if (run.input === "from b") return Promise.resolve(call()).finally(bInserted);
          // A's first insert is sent once B's has been answered: it finds B's run active.
          if (run.input === "from a" && !aHeld) {
            aHeld = true;
            return bIn.then(call);
          }
          return call();
        }),
    });
    const s = server;
    // Every run streams a little and then waits: the session stays busy.
    s.upstream.fallback = () => ({ text: "working", gate: new Promise(() => {}) });
    const session = (await s.request("POST", "/sessions", { body: {} })).body.id as string;
    const first = await s.request("POST", `/sessions/${session}/runs`, { body: { input: "first" } });
    expect(first.status).toBe(201);
    const startA = () =>
      s.request("POST", `/sessions/${session}/runs`, {
        body: { input: "from a", ifBusy: "interrupt" },
        headers: { "idempotency-key": "start-a" },
      });
    const [a, b] = await Promise.all([
      startA(),
      s.request("POST", `/sessions/${session}/runs`, { body: { input: "from b", ifBusy: "interrupt" } }),
    ]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(aHeld).toBe(true);
    expect((await finishedRun(s, first.body.id)).stopReason).toBe("aborted");
    const beaten = await finishedRun(s, b.body.id);
    expect(beaten.stopReason).toBe("aborted");
    expect(beaten.stopDetail).toContain(INTERRUPTED_BY);
    // B's run had ended before A's was inserted: A's is the session's active run.
    expect((await s.request("GET", `/runs/${a.body.id}`)).body.status).toBe("running");
    // A retry of A (its idempotency key) is answered with the run its second insert started.
    const replayed = await startA();
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(replayed.body.id).toBe(a.body.id);
  });
});
