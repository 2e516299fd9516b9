import { afterEach, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

/*
 * The other order of keyed-enqueue-racing-keyed-steer-makes-one-run: the enqueue's copy looks
 * for the key's steered input before the steer stores it, and inserts its run only once the
 * steer has stored it and looked for that run (finding none) and waits. The insert withdraws
 * the input (see admitRun): the steer is answered with the enqueue's run, and the active run
 * takes nothing.
 */

let server: TestServer;
afterEach(async () => {
  await server.close();
});

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("a keyed steer stored between its keyed enqueue copy's look and insert is withdrawn by that insert", async () => {
    const steerWaiting = gate();
    server = await startTestServer({
      backend,
      wrapStore: (store) =>
        aroundStore(
          aroundStore(store, "inputs", (name, _args, call) => {
            // The steer's wait for its input: it stored it and found no run of its key.
            if (name === "pendingStatus") steerWaiting.open();
            return call();
          }),
          "runs",
          async (name, args, call) => {
            if (name === "create" && (args[0] as { idempotencyKey?: string }).idempotencyKey === "K")
              await steerWaiting.wait;
            return call();
          },
        ),
    });
    const held = gate();
    server.upstream.enqueue({ toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }], gate: held.wait });
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
    const enqueue = request("enqueue");
    const steered = await request("steer");
    const enqueued = await enqueue;
    held.open();

    expect(enqueued.status).toBe(201);
    expect(steered.status).toBeLessThan(300);
    expect(steered.body.id).toBe(enqueued.body.id);
    await finishedRun(server, first.body.id);
    await finishedRun(server, enqueued.body.id);
    const users = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items
      .filter((m: { role: string }) => m.role === "user")
      .map((m: { content: string }) => m.content);
    expect(users).toEqual(["one", "two"]);
    const runs = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items;
    expect(runs).toHaveLength(2);
  });
});
