import { afterEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/store/runs.js";
import type { Store } from "../../src/store/store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server.close();
});

/** The store's `runs` with each method's calls going through `around` (which calls on with `call`). */
function aroundRuns(
  store: Store,
  around: (name: string, args: unknown[], call: () => Promise<unknown>) => Promise<unknown>,
): Store {
  const runs = new Proxy(store.runs, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => around(String(name), args, () => value.apply(target, args));
    },
  });
  return { ...store, runs };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Holds the first two lookups of a run by idempotency key until both were made: neither copy finds a run. */
function bothLookFirst() {
  let lookups = 0;
  let bothLooked!: () => void;
  const looked = new Promise<void>((resolve) => {
    bothLooked = resolve;
  });
  return async (call: () => Promise<unknown>) => {
    const result = await call();
    if (++lookups === 2) bothLooked();
    await looked;
    return result;
  };
}

describe.each(["sqlite", "postgres"] as const)("two copies of a keyed steer on an idle session, on %s", (backend) => {
  it("the copy that finds the run the other started is answered with that run, and the input is sent once", async () => {
    // The interleaving that loses: both copies look for a run of their key before either made
    // one; one finds the session idle and starts a run with the input; the other then finds
    // that run active and would steer the same input into it (or, once it ended, start another).
    let keyLookups = 0;
    const firstLookup = bothLookFirst();
    let activeLookups = 0;
    let raw!: Store;
    // The started run's model reply waits until the second copy has found that run active (and
    // a moment more, for what it does with it): the run is still going when that copy acts.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    server = await startTestServer({
      backend,
      wrapStore: (store) => {
        raw = store;
        return aroundRuns(store, async (name, args, call) => {
          // The first two lookups (one per copy) both answer before any run exists.
          if (name === "byIdempotencyKey" && ++keyLookups <= 2) return firstLookup(call);
          if (name === "active" && ++activeLookups === 2) {
            // The second copy looks for the active run once the first one's run is under way.
            const [sessionId] = args as [string];
            for (let i = 0; i < 500 && !(await raw.runs.active(sessionId)); i++) {
              await pause(5);
            }
            const result = await call();
            setTimeout(release, 200);
            return result;
          }
          return call();
        });
      },
    });
    server.upstream.enqueue({ text: "hi", gate }, { text: "a second answer, which no run should ask for" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const copy = () =>
      server.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: "hello", ifBusy: "steer" },
        headers: { "idempotency-key": "twice" },
      });
    const [a, b] = await Promise.all([copy(), copy()]);
    expect(activeLookups).toBeGreaterThanOrEqual(2);

    const [first, second] = a.headers.get("idempotent-replayed") === "true" ? [b, a] : [a, b];
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    await finishedRun(server, first.body.id);

    const runs = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items as RunRecord[];
    expect(runs.map((r) => r.id)).toEqual([first.body.id]);
    const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items as {
      role: string;
      content: string;
    }[];
    expect(messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["hello"]);
    expect(server.upstream.requests).toHaveLength(1);
    // Nor is the input left stored, to be queued as a run of its own after a restart.
    expect(await raw.inputs.pending(first.body.id)).toEqual([]);
    expect(await raw.inputs.orphaned()).toEqual([]);
  });

  it("the copy that finds another client's run active after the one the other copy started ended steers nothing into it", async () => {
    let keyLookups = 0;
    const firstLookup = bothLookFirst();
    let activeLookups = 0;
    let raw!: Store;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let sessionId = "";
    let otherRunId = "";
    server = await startTestServer({
      backend,
      wrapStore: (store) => {
        raw = store;
        return aroundRuns(store, async (name, _args, call) => {
          if (name === "byIdempotencyKey" && ++keyLookups <= 2) return firstLookup(call);
          if (name === "active" && ++activeLookups === 2) {
            // The second copy looks for the active run once the key's run has ended and another
            // client's run (asking the model twice, the second time held) is under way.
            for (let i = 0; i < 500; i++) {
              const runs = await raw.runs.list({ sessionId, limit: 10, cursor: null });
              if (runs.items.length === 1 && runs.items[0]?.status === "finished") break;
              await pause(5);
            }
            const other = await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "other" } });
            otherRunId = other.body.id;
            for (let i = 0; i < 500 && !(await raw.runs.active(sessionId)); i++) await pause(5);
            const result = await call();
            setTimeout(release, 300);
            return result;
          }
          return call();
        });
      },
    });
    server.upstream.enqueue(
      { text: "hi" },
      { toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }], gate },
      { text: "the other run's answer" },
    );
    sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
    const copy = () =>
      server.request("POST", `/sessions/${sessionId}/runs`, {
        body: { input: "hello", ifBusy: "steer" },
        headers: { "idempotency-key": "twice" },
      });
    const [a, b] = await Promise.all([copy(), copy()]);
    await finishedRun(server, otherRunId);

    const [first, second] = a.headers.get("idempotent-replayed") === "true" ? [b, a] : [a, b];
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    const messages = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items as {
      role: string;
      content: string;
    }[];
    expect(messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["hello", "other"]);
    expect(await raw.inputs.pending(otherRunId)).toEqual([]);
    expect(await raw.inputs.orphaned()).toEqual([]);
  });
});
