/**
 * A `?wait=true` start whose wait a shutdown cuts: its run is stored and goes on after the
 * restart (or on another instance), but the answer was a bare 503 SHUTTING_DOWN saying "retry",
 * without the run: a client retrying without an Idempotency-Key got 409 SESSION_BUSY, or a second
 * run. The answer now names the run (details.runId, Location) and says it goes on.
 */
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a wait cut by a shutdown answers 503 naming the run it started, which goes on, and closes the connection", async () => {
  server = await startTestServer();
  const s = server;
  s.upstream.enqueue({ text: "late", gate: new Promise<void>(() => {}) });
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  const waiting = s.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" } });
  await until(
    async () => s.upstream.requests.length,
    (n) => n === 1,
    "the run's model request",
  );
  const stopped = s.ctx.manager.shutdown({ graceMs: 500, resume: true });
  const answer = await waiting;
  await stopped;
  const runId = (await s.ctx.store.runs.active(session.id))?.id;
  expect(runId).toBeDefined();
  expect(answer.status).toBe(503);
  expect(answer.body.error).toMatchObject({ code: "SHUTTING_DOWN", details: { runId } });
  expect(answer.body.error.message).toContain(`/runs/${runId}`);
  expect(answer.headers.get("location")).toBe(`/runs/${runId}`);
  expect(answer.headers.get("connection")).toBe("close");
});
