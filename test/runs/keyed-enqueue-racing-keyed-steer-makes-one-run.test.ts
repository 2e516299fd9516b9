import { afterEach, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

/*
 * Found by a concurrent-ops fuzz driver (fast-check, one session over HTTP): on a busy session, a
 * client sends `ifBusy: enqueue` with Idempotency-Key K and, before that answer arrives, retries
 * the same request (same key, same input) with `ifBusy: steer`. The API says a repeated start
 * under a key is answered as the first was ("the same key, whatever its ifBusy"), so the input
 * runs once. Here the steer's copy looks for the key's run before the enqueue's insert, the
 * enqueue's copy looks for the key's steered input before the steer stores it, and both go
 * through: the enqueue's queued run holds the key while the steer's input is stored on the
 * active run. When that run goes on (a tool call), it takes the input: the key is answered
 * with two runs (202 the active run, 201 the queued one) and the input is committed twice.
 * When it ends (a final reply) without taking it (SQLite), the left input is made a third run
 * beside the enqueue's: the steer is answered with the enqueue's run, but a run nobody was
 * answered with commits the same input a second time. Either way the model is asked twice.
 *
 * The interleaving is made deterministic by holding the steer's `inputs.add` (a slow store
 * write) until the enqueue has been answered, and the first run's model reply until that add
 * has returned.
 */

let server: TestServer;
afterEach(async () => {
  await server.close();
});

async function race(backend: "sqlite" | "postgres", firstReply: "text" | "tool") {
  const enqueueAnswered = gate();
  let addSeen!: () => void;
  let addDone!: (added: unknown) => void;
  const steerAdded = new Promise<unknown>((resolve) => {
    addDone = resolve;
  });
  const steerAdding = new Promise<void>((resolve) => {
    addSeen = resolve;
  });
  server = await startTestServer({
    backend,
    wrapStore: (store) =>
      aroundStore(store, "inputs", async (name, _args, call) => {
        if (name !== "add") return call();
        addSeen();
        await enqueueAnswered.wait;
        const added = await call();
        addDone(added);
        return added;
      }),
  });
  const held = gate();
  server.upstream.enqueue(
    firstReply === "text"
      ? { text: "first", gate: held.wait }
      : { toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }], gate: held.wait },
  );
  server.upstream.fallback = () => ({ text: "done" });
  const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
  const first = await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "one" } });
  expect(first.status).toBe(201);
  await until(
    () => server.upstream.requests.length,
    (n) => n === 1,
    "the first run's model request",
  );

  const request = (ifBusy: string) =>
    server.request("POST", `/sessions/${sessionId}/runs`, {
      body: { input: "two", ifBusy },
      headers: { "idempotency-key": "K" },
    });
  // The steer copy goes first, and is held at storing its input.
  const steer = request("steer");
  await steerAdding;
  const enqueue = await request("enqueue");
  enqueueAnswered.open();
  // The steer's input is stored on the first run (still held), after the enqueue's run.
  expect(await steerAdded).toBe(true);
  held.open();
  const steered = await steer;

  expect(enqueue.status).toBe(201);
  expect(steered.status).toBeLessThan(300);
  await finishedRun(server, first.body.id);
  await finishedRun(server, enqueue.body.id);

  const users: string[] = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items
    .filter((m: { role: string }) => m.role === "user")
    .map((m: { content: string }) => m.content);
  const runs = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items.map((r: { id: string }) => r.id);
  // One key, one run; the input committed once.
  return { steerRun: steered.body.id, keyRun: enqueue.body.id, users, runs: runs.length };
}

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("a keyed enqueue and its keyed steer retry racing on a busy session are answered with one run, and the input runs once (the active run goes on)", async () => {
    // The active run (a tool call) takes the steered input at its next model request: the
    // steer is answered 202 with it, the enqueue 201 with its queued run, which runs the input again.
    const out = await race(backend, "tool");
    expect(out).toEqual({ steerRun: out.keyRun, keyRun: out.keyRun, users: ["one", "two"], runs: 2 });
  });
});

// On PostgreSQL this one holds (the input left on the ended run is not made a second run).
describe.each(["sqlite"] as const)("on %s", (backend) => {
  it("a keyed enqueue and its keyed steer retry racing on a busy session are answered with one run, and the input runs once (the active run ends)", async () => {
    // The active run ends (a final reply) without taking the steered input, which is made a
    // run of its own beside the enqueue's.
    const out = await race(backend, "text");
    expect(out).toEqual({ steerRun: out.keyRun, keyRun: out.keyRun, users: ["one", "two"], runs: 2 });
  });
});
