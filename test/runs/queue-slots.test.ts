import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("over SQLite, a restart starts the queues left behind only within MAX_CONCURRENT_RUNS, the rest as runs end", async () => {
  // Three sessions, each with a run whose model never answers and a run queued behind it.
  const first = await startTestServer();
  const queued: string[] = [];
  for (let i = 0; i < 3; i++) {
    first.upstream.enqueue({ text: "never finished", gate: new Promise(() => {}) });
    const session = (await first.request("POST", "/sessions", { body: {} })).body.id as string;
    await first.request("POST", `/sessions/${session}/runs`, { body: { input: `active ${i}` } });
    await until(
      async () => first.upstream.requests.length,
      (n) => n === i + 1,
      "the model request",
    );
    const run = await first.request("POST", `/sessions/${session}/runs`, {
      body: { input: `queued ${i}`, ifBusy: "enqueue" },
    });
    queued.push(run.body.id);
  }
  const dir = first.dir;
  // The shutdown cancels the active runs and starts nothing: three idle sessions with a queue each.
  await first.close({ keepDir: true });

  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  server = await startTestServer({ dir, env: { MAX_CONCURRENT_RUNS: "1" } });
  const current = server;
  current.upstream.enqueue({ text: "one", gate }, { text: "two" }, { text: "three" });
  const { manager, store } = current.ctx;
  await until(
    async () => current.upstream.requests.length,
    (n) => n === 1,
    "the first queued run's model request",
  );
  // One slot: one queued run started, the other two wait for it.
  const statuses = async () => Promise.all(queued.map(async (id) => (await store.runs.get(id))?.status));
  expect((await statuses()).filter((s) => s === "queued")).toHaveLength(2);
  expect(manager.liveCount).toBe(1);

  let most = 0;
  const sampler = setInterval(() => {
    most = Math.max(most, manager.liveCount);
  }, 1);
  try {
    release();
    for (const id of queued) expect((await finishedRun(current, id)).stopReason).toBe("complete");
  } finally {
    clearInterval(sampler);
  }
  expect(most).toBe(1);
});
