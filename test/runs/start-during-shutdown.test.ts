/**
 * A start admitted just before shutdown began (past its check that the server accepts runs,
 * its run being written) registered its run after the shutdown had taken the list of runs to
 * stop: the run then executed (its model asked) while the server shut down, neither suspended
 * for the next start nor, with ON_RESTART=abort, aborted. Now a run registered once shutdown
 * began is stopped as the others were.
 */
import { afterEach, expect, it } from "vitest";
import type { RunRecord } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

for (const resume of [false, true]) {
  it(`a run whose start was being written when shutdown began is not executed (${resume ? "resume" : "abort"})`, async () => {
    const reached = gate();
    const written = gate();
    server = await startTestServer({
      wrapStore: (store) =>
        aroundStore(store, "runs", (name, args, call) => {
          if (name !== "create" || (args[0] as RunRecord).input !== "late") return call();
          reached.open();
          return written.wait.then(call);
        }),
    });
    const s = server;
    s.upstream.fallback = () => ({ text: "answered" });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const start = s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "late" } });
    await reached.wait;
    const shutdown = s.ctx.manager.shutdown({ graceMs: 2000, resume });
    written.open();
    const answer = await start;
    await shutdown;
    // However the run was stopped, it is not executing for long.
    await until(
      () => s.ctx.manager.liveCount,
      (n) => n === 0,
      "the run to stop",
    );
    const run = await s.ctx.store.runs.get(answer.body.id);
    expect({
      modelRequests: s.upstream.requests.length,
      status: run?.status,
      stopReason: run?.stopReason ?? null,
    }).toEqual({
      modelRequests: 0,
      status: resume ? "running" : "finished",
      stopReason: resume ? null : "aborted",
    });
  });
}
