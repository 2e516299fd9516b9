/**
 * openapi.yaml (ifBusy steer): when the active run ends before taking the input, "`input` starts
 * a new run instead, as `enqueue` does, `201` with it (the other fields apply only then)". When
 * that start is refused (here by a shutdown, ON_RESTART=abort; likewise at the key's
 * MAX_RUNS_PER_KEY) the input is queued as a run all the same (201), but that run is made with
 * the ended run's settings (src/runs/queue.ts queueLeftInput -> runLike), not the steer's own
 * `maxTurns` and `approval`: the run would
 * execute `shell` unasked although the steer asked for approval of it.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

it("a steer whose run a shutdown ended is queued with the steer's own maxTurns and approval", async () => {
  server = await startTestServer({ env: { ON_RESTART: "abort" } });
  const first = server;
  first.upstream.enqueue({ text: "never finished", gate: new Promise(() => {}) });
  const session = (await first.request("POST", "/sessions", { body: {} })).body.id as string;
  const active = (
    await first.request("POST", `/sessions/${session}/runs`, {
      body: { input: "active", maxTurns: 7, approval: { tools: { shell: "allow" } } },
    })
  ).body;
  await until(
    async () => first.upstream.requests.length,
    (n) => n === 1,
    "the model request",
  );
  const steering = first.request("POST", `/sessions/${session}/runs`, {
    body: { input: "steered", ifBusy: "steer", maxTurns: 3, approval: { tools: { shell: "ask" } } },
  });
  await until(
    () => first.ctx.store.inputs.pending(active.id),
    (p) => p.length === 1,
    "the steered input",
  );
  await first.close({ keepDir: true });
  server = undefined;
  const steered = await steering;
  expect({ status: steered.status, run: steered.body.status }).toEqual({ status: 201, run: "queued" });
  const store = openSqliteStore({ path: join(first.dir, "agent.db") });
  const stored = await store.runs.get(steered.body.id);
  await store.close();
  expect({
    answered: { maxTurns: steered.body.maxTurns },
    stored: { maxTurns: stored?.maxTurns, approval: stored?.approval },
  }).toEqual({
    answered: { maxTurns: 3 },
    stored: { maxTurns: 3, approval: { tools: { shell: "ask" } } },
  });
});
