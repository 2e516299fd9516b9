/**
 * README (Events): "A request cut by a restart (a crash, or a shutdown with ON_RESTART=resume)
 * was made: once its `turn.started` is stored it counts in `modelCalls`". A server restarted
 * with ON_RESTART=abort ends such a run `aborted`; the request it had made (its `turn.started`
 * is in the run's events, and the model was asked) must still be counted in its stats.
 */
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let upstream: FakeUpstream | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await upstream?.close();
  upstream = undefined;
});

it("a run cut mid model stream and aborted by the restart (ON_RESTART=abort) counts that request in modelCalls", async () => {
  upstream = await startFakeUpstream();
  // A run whose model request streams and never finishes; the server shuts down once the
  // request's turn.started is stored, leaving the run for the next start (as a crash would).
  const first = await startTestServer({ upstream });
  upstream.enqueue({ text: "never finished", gate: new Promise(() => {}) });
  const sessionId = (await first.request("POST", "/sessions", { body: {} })).body.id;
  const runId = (await first.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "go" } })).body.id;
  await until(
    () => first.ctx.store.events.ofType(runId, "turn.started"),
    (events) => events.length === 1,
    "the turn.started to be stored",
  );
  await first.close({ keepDir: true, resume: true });
  const dir = first.dir;
  server = await startTestServer({ upstream, dir, env: { ON_RESTART: "abort" } });
  const run = await finishedRun(server, runId);
  expect(run.stopReason).toBe("aborted");
  const events = (await server.ctx.store.events.ofType(runId, "turn.started")).map((e) => JSON.parse(e.data));
  expect(events.map((e) => e.turn)).toEqual([1]);
  expect(upstream.requests).toHaveLength(1);
  // The request was made (the upstream got it, its turn.started is stored): it counts.
  expect(run.stats.modelCalls).toBe(1);
  // Its stop detail places the stop in the turn that request began, as its stats count it.
  expect(run.stopDetail).toMatch(/^stopped in turn 1: /);
});
