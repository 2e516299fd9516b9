import { afterEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/store/runs.js";
import type { Store } from "../../src/store/store.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server.close();
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A server (on `backend`) where two copies of a keyed steer race: the first two lookups of a
 * run by idempotency key (one per copy) both answer before any run exists, and the second
 * lookup of the session's active run waits for `beforeSecondLook` first. `gate` opens a moment
 * after that lookup answered (for what its copy does with it); `raw` is the store unwrapped.
 */
async function steerRace(
  backend: "sqlite" | "postgres",
  beforeSecondLook: (raw: Store, sessionId: string) => Promise<void>,
): Promise<{ raw: Store; gate: Promise<void> }> {
  let keyLookups = 0;
  let keyAnswers = 0;
  let bothLooked!: () => void;
  const looked = new Promise<void>((resolve) => {
    bothLooked = resolve;
  });
  let activeLookups = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let raw!: Store;
  server = await startTestServer({
    backend,
    wrapStore: (store) => {
      raw = store;
      return aroundStore(store, "runs", async (name, args, call) => {
        if (name === "keyed" && ++keyLookups <= 2) {
          const result = await call();
          // Both answered (not only asked): neither copy goes on until the other's answer is in.
          if (++keyAnswers === 2) bothLooked();
          await looked;
          return result;
        }
        if (name !== "active" || ++activeLookups !== 2) return call();
        await beforeSecondLook(raw, args[0] as string);
        const result = await call();
        setTimeout(release, 250);
        return result;
      });
    },
  });
  return { raw, gate };
}

/** Both copies of the keyed steer, at once: the one that started the run first, then its replay. */
async function bothCopies(sessionId: string) {
  const copy = () =>
    server.request("POST", `/sessions/${sessionId}/runs`, {
      body: { input: "hello", ifBusy: "steer" },
      headers: { "idempotency-key": "twice" },
    });
  const [a, b] = await Promise.all([copy(), copy()]);
  return a.headers.get("idempotent-replayed") === "true" ? ([b, a] as const) : ([a, b] as const);
}

const userInputs = async (sessionId: string) =>
  ((await server.request("GET", `/sessions/${sessionId}/messages`)).body.items as { role: string; content: string }[])
    .filter((m) => m.role === "user")
    .map((m) => m.content);

/** Polls `done` every 5 ms, at most 500 times. */
async function poll(done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await done()); i++) await pause(5);
}

describe.each(["sqlite", "postgres"] as const)("two copies of a keyed steer on an idle session, on %s", (backend) => {
  it("the copy that finds the run the other started is answered with that run, and the input is sent once", async () => {
    // One copy finds the session idle and starts a run with the input; the other then finds
    // that run active (its reply held) and would steer the same input into it.
    const { raw, gate } = await steerRace(backend, (store, sessionId) =>
      poll(async () => (await store.runs.active(sessionId)) !== null),
    );
    server.upstream.enqueue({ text: "hi", gate }, { text: "a second answer, which no run should ask for" });
    const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
    const [first, second] = await bothCopies(sessionId);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    await finishedRun(server, first.body.id);

    const runs = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items as RunRecord[];
    expect(runs.map((r) => r.id)).toEqual([first.body.id]);
    expect(await userInputs(sessionId)).toEqual(["hello"]);
    expect(server.upstream.requests).toHaveLength(1);
    // Nor is the input left stored, to be queued as a run of its own after a restart.
    expect(await raw.inputs.pending(first.body.id)).toEqual([]);
    expect(await raw.inputs.orphaned()).toEqual([]);
  });

  it("the copy that finds another client's run active after the one the other copy started ended steers nothing into it", async () => {
    // The second copy looks once the key's run has ended and another client's run (asking the
    // model twice, the second time held) is under way.
    let otherRunId = "";
    const { raw, gate } = await steerRace(backend, async (store, sessionId) => {
      await poll(async () => {
        const runs = await store.runs.list({ sessionId, limit: 10, cursor: null });
        return runs.items.length === 1 && runs.items[0]?.status === "finished";
      });
      otherRunId = (await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "other" } })).body.id;
      await poll(async () => (await store.runs.active(sessionId)) !== null);
    });
    server.upstream.enqueue(
      { text: "hi" },
      { toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }], gate },
      { text: "the other run's answer" },
    );
    const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
    const [first, second] = await bothCopies(sessionId);
    await finishedRun(server, otherRunId);

    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(await userInputs(sessionId)).toEqual(["hello", "other"]);
    expect(await raw.inputs.pending(otherRunId)).toEqual([]);
    expect(await raw.inputs.orphaned()).toEqual([]);
  });
});
