import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * A steer whose run ends without taking its input gets a run of that input (runs.create with
 * `takesInput`, by the run's end or the steer). When another instance deletes the session just before
 * that insert (this instance's delete waits for the starts in flight here), the steer is
 * answered 404 like any request for a session that is gone. Before, SQLite withdrew the input
 * first (the delete had taken it) and refused `input_taken`, which the steer took for another
 * request's run of it and, finding none, answered 500. (PostgreSQL's refusal, `active_run`
 * before, made the start try again queued, whose insert met the deleted session: 404 as well.)
 */
describe.each(["sqlite", "postgres"] as const)("a steer racing its session's delete, on %s", (backend) => {
  it("the steer's start of its left input answers 404 once the session is deleted", async () => {
    let sessionId = "";
    let deleted: boolean | null = null;
    let deleting: Promise<boolean> | null = null;
    server = await startTestServer({
      backend,
      wrapStore: (store) => ({
        ...store,
        runs: {
          ...store.runs,
          create: async (run, events, options) => {
            // Another instance's delete (this one's waits for the starts in flight here), before
            // the first insert of a run of the left input (the run's end's, or the steer's).
            if (options?.takesInput !== undefined) {
              deleting ??= store.sessions.delete(sessionId);
              deleted = await deleting;
            }
            return store.runs.create(run, events, options);
          },
        },
      }),
    });
    const current = server;
    let release!: () => void;
    current.upstream.enqueue({ text: "the last word", gate: new Promise<void>((r) => (release = r)) });
    sessionId = (await current.request("POST", "/sessions", { body: {} })).body.id;
    const run = (await current.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "start" } })).body;
    await until(
      () => current.upstream.requests.length,
      (n) => n === 1,
      "the model request",
    );
    const steered = current.request("POST", `/sessions/${sessionId}/runs`, {
      body: { input: "one more thing", ifBusy: "steer" },
    });
    await until(
      () => current.ctx.store.inputs.pending(run.id),
      (p) => p.length === 1,
      "the input to be stored",
    );
    release();
    const res = await steered;

    expect({ deleted, status: res.status, code: res.body.error?.code }).toEqual({
      deleted: true,
      status: 404,
      code: "NOT_FOUND",
    });
    expect((await current.request("GET", `/sessions/${sessionId}`)).status).toBe(404);
    expect(current.upstream.requests).toHaveLength(1);
  });
});
