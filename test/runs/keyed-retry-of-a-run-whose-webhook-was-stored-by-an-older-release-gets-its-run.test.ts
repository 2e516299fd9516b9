/**
 * Upgrade, then a client retries a start under its Idempotency-Key (the answer to its first
 * POST was lost while the server was being replaced: the very case the key exists for).
 *
 * A release before dad6833 stored a run's resolved webhook target as `{url, events}`
 * (src/store/runs.ts runColumns: `toJson(run.webhook)` of a WebhookTarget), not saying whether it
 * was the server's WEBHOOK_URL. Such a target was read as the server's, and the idempotency check
 * (src/runs/idempotency.ts sameTarget) then refused the retry naming the very same target (its
 * session's here) 409 IDEMPOTENCY_KEY_REUSED `differs: ["webhook"]`.
 *
 * Expected (README: "an `Idempotency-Key` makes a retry with the same body return the same
 * run"; product brief: "An Idempotency-Key header makes a retried POST return the same run
 * instead of starting a second"): the same request gets the same run back, 201 with
 * `Idempotent-Replayed: true`, whichever release stored the run, on either store.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";
import { WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const env = { WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1" };
// Nothing listens there: deliveries fail at once and are retried later, which this test does not watch.
const target = { url: "http://127.0.0.1:9/hooks", events: ["run.finished"] };

/** One store's database across a restart: where the servers keep it, and its runs' webhook column read and rewritten. */
interface Backend {
  /** The options of startTestServer that open this database (`dir`: the previous server's data directory). */
  server(dir?: string): Promise<{ pgUrl?: string; dir?: string }>;
  storedTarget(params: { dir: string; runId: string }): Promise<string>;
  storeTarget(params: { dir: string; runId: string; json: string }): Promise<void>;
}

const sqlite: Backend = {
  server: async (dir) => (dir ? { dir } : {}),
  async storedTarget({ dir, runId }) {
    const db = new Database(join(dir, "agent.db"));
    try {
      return db.prepare("SELECT webhook FROM runs WHERE id = ?").pluck().get(runId) as string;
    } finally {
      db.close();
    }
  },
  async storeTarget({ dir, runId, json }) {
    const db = new Database(join(dir, "agent.db"));
    try {
      db.prepare("UPDATE runs SET webhook = ? WHERE id = ?").run(json, runId);
    } finally {
      db.close();
    }
  },
};

/** A PostgreSQL database made for the test (kept across its servers, dropped at its end). */
function postgres(): Backend {
  let url: Promise<string> | undefined;
  const database = () => {
    url ??= createTestPgDatabase().then((made) => {
      cleanups.unshift(() => made.drop());
      return made.url;
    });
    return url;
  };
  const query = async (sql: string, values: unknown[]) => {
    const client = new pg.Client({ connectionString: await database() });
    await client.connect();
    try {
      return await client.query(sql, values);
    } finally {
      await client.end();
    }
  };
  return {
    server: async (dir) => ({ pgUrl: await database(), ...(dir ? { dir } : {}) }),
    storedTarget: async ({ runId }) => (await query("SELECT webhook FROM runs WHERE id = $1", [runId])).rows[0].webhook,
    storeTarget: async ({ runId, json }) =>
      void (await query("UPDATE runs SET webhook = $1 WHERE id = $2", [json, runId])),
  };
}

describe.each([
  { name: "sqlite", backend: () => sqlite },
  { name: "postgres", backend: postgres },
])("on $name", ({ backend: open }) => {
  it("a start retried under its Idempotency-Key after an upgrade gets its run back, its session's webhook stored by the older release", async () => {
    const backend = open();
    const upstream: FakeUpstream = await startFakeUpstream();
    cleanups.push(() => upstream.close());
    const before: TestServer = await startTestServer({ upstream, env, ...(await backend.server()) });
    let closed = false;
    cleanups.push(() => (closed ? undefined : before.close()));
    const session = (await before.request("POST", "/sessions", { body: { webhook: target } })).body;
    upstream.enqueue({ text: "done" });
    const headers = { "idempotency-key": "order-42" };
    const first = await before.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" }, headers });
    expect(first.status).toBe(201);
    await finishedRun(before, first.body.id);
    await before.close({ keepDir: true });
    closed = true;

    // The run's target as the release before dad6833 wrote it: {url, events}, no serverDefault.
    const where = { dir: before.dir, runId: first.body.id };
    expect(JSON.parse(await backend.storedTarget(where))).toEqual({ ...target, serverDefault: false });
    await backend.storeTarget({ ...where, json: JSON.stringify(target) });

    const after = await startTestServer({ upstream, env, ...(await backend.server(before.dir)) });
    cleanups.push(() => after.close());
    const retry = await after.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" }, headers });
    // A refusal's code shows when it fails (a run's own `error` is null: no code either).
    expect({ status: retry.status, code: retry.body.error?.code }).toEqual({ status: 201, code: undefined });
    expect(retry.body.id).toBe(first.body.id);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(upstream.requests).toHaveLength(1);
  });
});
