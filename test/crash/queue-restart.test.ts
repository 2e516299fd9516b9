import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openPgStore } from "../../src/store/pg/pg-store.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { openSse } from "../helpers/sse-client.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let upstream: FakeUpstream;
let dir: ReturnType<typeof tempDir>;
let database: TestPgDatabase | null = null;
const children: ChildServer[] = [];
const restarted: TestServer[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream.close();
});
afterEach(async () => {
  for (const server of restarted.splice(0)) await server.close({ keepDir: true });
  for (const child of children.splice(0)) {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
    await child.exited;
  }
  dir?.cleanup();
  await database?.drop();
  database = null;
});

async function start(): Promise<ChildServer> {
  // Over PostgreSQL the restarted server has the same INSTANCE_ID (as a restarted container):
  // it takes its own runs back at once.
  const env: Record<string, string> = database ? { DATABASE_URL: database.url, INSTANCE_ID: "queue-test" } : {};
  const child = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL, env });
  children.push(child);
  return child;
}

/**
 * The server restarted over the killed one's database and workspaces, in this process: the same
 * start as the built server's (configuration, store, app, listen, then the recovery of what was
 * left), without a second process's start.
 */
async function restart(): Promise<TestServer> {
  const server = await startTestServer({
    dir: dir.path,
    upstream,
    ...(database ? { pgUrl: database.url, env: { INSTANCE_ID: "queue-test" } } : {}),
  });
  restarted.push(server);
  return server;
}

/** The server's database, opened beside it (as a second connection). */
async function openStore(): Promise<Store> {
  return database
    ? openPgStore({ url: database.url, maxConnections: 2 })
    : openSqliteStore({ path: join(dir.path, "agent.db") });
}

describe.each(["sqlite", "postgres"] as const)("queued runs and steered input across kill -9 (%s)", (backend) => {
  beforeEach(async () => {
    dir = tempDir("queue-restart-");
    if (backend === "postgres") database = await createTestPgDatabase();
  });

  it("the queue and a steer's input survive a crash: the run resumes with the input, then the queue runs in order", async () => {
    const server = await start();
    const before = upstream.requests.length;
    upstream.enqueue({ hang: "before-headers" });
    const session = (await api(server.url, "POST", "/sessions", {})).body.id as string;
    const first = await api(server.url, "POST", `/sessions/${session}/runs`, { input: "first" });
    expect(first.status).toBe(201);
    await until(
      async () => upstream.requests.length,
      (n) => n === before + 1,
      "the first model request",
    );
    const queued = [];
    for (const input of ["second", "third"]) {
      const res = await api(server.url, "POST", `/sessions/${session}/runs`, { input, ifBusy: "enqueue" });
      expect(res.body.status).toBe("queued");
      queued.push(res.body.id as string);
    }
    // The steer waits for the run to take its input; the crash comes first.
    const steering = api(server.url, "POST", `/sessions/${session}/runs`, { input: "steered", ifBusy: "steer" }).catch(
      (err: unknown) => err,
    );
    // PostgreSQL can be watched meanwhile; the SQLite file is locked by its server until it dies.
    if (database) {
      const watch = await openStore();
      await until(
        () => watch.inputs.pending(first.body.id),
        (p) => p.length === 1,
        "the steered input to be stored",
      );
      await watch.close();
    } else {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    server.process.kill("SIGKILL");
    expect(await server.exited).toBe("SIGKILL");
    expect(await steering).toBeInstanceOf(Error);
    const store = await openStore();
    try {
      expect((await store.inputs.pending(first.body.id)).map((i) => i.content)).toEqual(["steered"]);
      expect((await store.runs.queued(session)).map((r) => r.id)).toEqual(queued);
    } finally {
      await store.close();
    }

    upstream.enqueue({ text: "first, steered" }, { text: "second done" }, { text: "third done" });
    const again = await restart();
    const last = await openSse(`${again.url}/runs/${queued[1]}/events`);
    const events = await last.ended;
    expect(events.map((e) => e.event).slice(0, 2)).toEqual(["run.queued", "run.started"]);
    expect(events.at(-1)?.json.run.stopReason).toBe("complete");
    for (const id of [first.body.id, ...queued]) {
      expect((await api(again.url, "GET", `/runs/${id}`)).body).toMatchObject({
        status: "finished",
        stopReason: "complete",
      });
    }
    // After the restart: the resumed run with the steered input last, then the queue, oldest first.
    const asked = upstream.requests.slice(before + 1).map((r) => {
      const users = r.body.messages.filter((m: { role: string }) => m.role === "user");
      return users.map((m: { content: string }) => m.content).join(" + ");
    });
    expect(asked).toEqual(["first + steered", "first + steered + second", "first + steered + second + third"]);
    const history = (await api(again.url, "GET", `/sessions/${session}/messages`)).body.items;
    expect(history.map((m: { role: string; runId: string }) => [m.role, m.runId])).toEqual([
      ["user", first.body.id],
      ["user", first.body.id],
      ["assistant", first.body.id],
      ["user", queued[0]],
      ["assistant", queued[0]],
      ["user", queued[1]],
      ["assistant", queued[1]],
    ]);
  });
});
