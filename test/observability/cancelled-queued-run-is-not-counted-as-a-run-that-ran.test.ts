/**
 * GET /metrics: `agent_runs_started_total` counts runs started and `agent_runs_finished_total`
 * runs ended (README, Observability). A run queued behind the session's active run
 * (`ifBusy: "enqueue"`) and cancelled with DELETE before it started "ends `aborted` without
 * running" (README, Busy sessions): it never started. Counting its end but not its start makes
 * the two counters disagree, so that started - finished (the runs in flight) goes negative and
 * the aborted runs include ones that never ran. Every run counted finished must have been
 * counted started (or neither): a run that never started is counted in neither.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const scrape = async () => new Exposition(await (await fetch(`${server.url}/metrics`)).text());

it("a queued run cancelled before it started is not counted as finished without being counted as started", async () => {
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const held = gate();
  server.upstream.enqueue({ text: "first", gate: held.wait });
  const active = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "one" } });
  expect(active.status).toBe(201);
  const queued = await server.request("POST", `/sessions/${session.id}/runs`, {
    body: { input: "two", ifBusy: "enqueue" },
  });
  expect(queued.status).toBe(201);
  expect(queued.body.status).toBe("queued");

  const cancelled = await server.request("DELETE", `/runs/${queued.body.id}`);
  expect(cancelled.status).toBe(202);
  held.open();
  expect((await finishedRun(server, active.body.id)).stopReason).toBe("complete");
  const never = await finishedRun(server, queued.body.id);
  expect(never).toMatchObject({ stopReason: "aborted", stats: { modelCalls: 0 } });

  const m = await scrape();
  const finished =
    m.value("agent_runs_finished_total", { status: "finished", stop_reason: "complete" }) +
    m.value("agent_runs_finished_total", { status: "finished", stop_reason: "aborted" });
  expect(m.value("agent_runs_live")).toBe(0);
  // Nothing is in flight: the runs counted as started are the runs counted as finished.
  expect(m.value("agent_runs_started_total") - finished).toBe(0);
  // The run that never ran is in neither: one run started, and it completed.
  expect(m.value("agent_runs_started_total")).toBe(1);
  expect(m.value("agent_runs_finished_total", { status: "finished", stop_reason: "aborted" })).toBe(0);
});
