import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a shutdown starts no queued run, and a steer whose run it ended is answered with its input queued; the restart starts the queue", async () => {
  const first = await startTestServer();
  first.upstream.enqueue({ text: "never finished", gate: new Promise(() => {}) });
  const session = (await first.request("POST", "/sessions", { body: {} })).body.id as string;
  const active = (await first.request("POST", `/sessions/${session}/runs`, { body: { input: "active" } })).body;
  await until(
    async () => first.upstream.requests.length,
    (n) => n === 1,
    "the model request",
  );
  const queued = (
    await first.request("POST", `/sessions/${session}/runs`, { body: { input: "queued", ifBusy: "enqueue" } })
  ).body;
  const steering = first.request("POST", `/sessions/${session}/runs`, { body: { input: "steered", ifBusy: "steer" } });
  await until(
    () => first.ctx.store.inputs.pending(active.id),
    (p) => p.length === 1,
    "the steered input",
  );
  const dir = first.dir;
  // A shutdown that cancels its runs: the active run ends aborted, and nothing else starts.
  // The steer, whose run ended without its input, is answered with the run its input is
  // queued as (201), not 202 naming the run that never took it (the shutdown lets it answer).
  await first.close({ keepDir: true });
  const steered = await steering;
  expect({ status: steered.status, run: steered.body.status, input: steered.body.input }).toEqual({
    status: 201,
    run: "queued",
    input: "steered",
  });

  const store = openSqliteStore({ path: join(dir, "agent.db") });
  expect((await store.runs.get(active.id))?.stopReason).toBe("aborted");
  expect(await store.runs.queuedIds(session)).toEqual([queued.id, steered.body.id]);
  expect(await store.inputs.orphaned()).toEqual([]);
  await store.close();

  server = await startTestServer({ dir });
  server.upstream.enqueue({ text: "queued done" }, { text: "steered done" });
  const runs = await until(
    async () => (await server?.request("GET", `/sessions/${session}/runs`))?.body.items,
    (items: { status: string; input: string }[]) => items.length === 3 && items.every((r) => r.status === "finished"),
    "the queue to run",
  );
  const byInput = Object.fromEntries(runs.map((r: { input: string }) => [r.input, r]));
  expect(byInput.queued).toMatchObject({ id: queued.id, stopReason: "complete" });
  expect(byInput.steered).toMatchObject({ stopReason: "complete" });
  expect(
    server.upstream.requests.map(
      (r) => r.body.messages.filter((m: { role: string }) => m.role === "user").at(-1)?.content,
    ),
  ).toEqual(["queued", "steered"]);
  expect(await server.ctx.store.inputs.orphaned()).toEqual([]);
});
