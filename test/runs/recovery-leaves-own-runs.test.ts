import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { composeContext } from "../../src/compose.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import { gate } from "../fakes/gate.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * serve.ts listens first and recovers the runs a previous process left afterwards, so a client
 * may start a run before the start-up claim. Before, that claim took the run too (over SQLite
 * every live run, over PostgreSQL a stable INSTANCE_ID's own runs), stopped it as stale and
 * resumed it: the model was asked twice, with a second turn.started. Now the start-up claim
 * leaves the runs this process holds alone: one model request, one turn, nothing recovered.
 */
describe.each(["sqlite", "postgres"] as const)("a run started between listen and start-up recovery (%s)", (backend) => {
  it("is not stopped and resumed by the start-up recovery (one model request, one turn)", async () => {
    const dir = tempDir("rv-early-");
    cleanups.push(() => dir.cleanup());
    const upstream = await startFakeUpstream();
    cleanups.push(() => upstream.close());
    const database = backend === "postgres" ? await createTestPgDatabase() : null;
    if (database) cleanups.push(() => database.drop());
    const config = loadConfig({
      DATABASE_PATH: join(dir.path, "agent.db"),
      WORKSPACE_ROOT: join(dir.path, "workspaces"),
      OPENAI_BASE_URL: upstream.baseURL,
      OPENAI_API_KEY: "sk-test-key",
      OPENAI_MODEL: "fake-model",
      LOG_LEVEL: "silent",
      MODEL_MAX_RETRIES: "0",
      ...(database ? { INSTANCE_ID: "stable-pod-0" } : {}),
    });
    const logger = createLogger({ level: "silent" });
    const store = database ? await openPgStore({ url: database.url }) : undefined;
    const ctx = composeContext(config, logger, { store });
    const app = await buildApp(ctx, logger);
    cleanups.push(async () => {
      await ctx.manager.shutdown({ graceMs: 1000 });
      await app.close();
      await ctx.store.close();
    });
    // The order of serve.ts: listen ...
    await app.listen({ port: 0, host: "127.0.0.1" });
    const address = app.server.address();
    const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

    // ... a client is quick: its run's model stream is under way ...
    const release = gate<void>();
    upstream.enqueue({ text: ["hello ", "world"], gate: release.wait });
    upstream.enqueue({ text: "asked twice" });
    const session = await (
      await fetch(`${url}/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    ).json();
    const started = await fetch(`${url}/sessions/${session.id}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "hi" }),
    });
    expect(started.status).toBe(201);
    const run = await started.json();
    const watcher = await openSse(`${url}/runs/${run.id}/events`);
    await watcher.waitFor((e) => e.event === "text.delta");

    // ... then the start-up recovery of what a previous process left (nothing was left).
    const report = await ctx.manager.ownership.recoverAtStart();
    release.open(undefined);
    const events = await watcher.ended;

    // The model was asked once, the turn began once, and recovery took nothing over.
    expect({
      modelRequests: upstream.requests.length,
      turnsStarted: events.filter((e) => e.event === "turn.started").length,
      recoveredByStartup: report.resumed.length,
    }).toEqual({ modelRequests: 1, turnsStarted: 1, recoveredByStartup: 0 });
    expect(events.at(-1)?.json.run.stopReason).toBe("complete");
  });
});
