/**
 * kill -9 at random instants: a real server, on a real SQLite file and on PostgreSQL (the
 * restarted server with the same INSTANCE_ID), driven by a scripted model through a workload of
 * every kind of run (several tool calls a turn, approvals, streamed text, several turns,
 * `?wait`, a queue, a steer, a cancel or an interrupt, every start retried with its idempotency
 * key until answered), is killed at an instant a seeded PRNG picks (some milliseconds in, or
 * just after the model's Nth request), sometimes killed again while it starts or soon after
 * (amid its recovery), sometimes restarted with ON_RESTART=abort, restarted on the same data
 * until every run has finished, and then checked against the durability promise
 * (test/helpers/kill-anywhere/invariants.ts).
 *
 * KILL_ANYWHERE_ITERATIONS (default 1) iterations per backend of KILL_ANYWHERE_BACKENDS
 * (default "sqlite,postgres"), from seed KILL_ANYWHERE_SEED (default: drawn now) upwards, one
 * seed each. A failing iteration names its seed and keeps its directory;
 * `KILL_ANYWHERE_SEED=<seed> KILL_ANYWHERE_ITERATIONS=1 KILL_ANYWHERE_BACKENDS=<backend>`
 * replays its choices (the instants themselves depend on the machine's timing). A soak:
 * KILL_ANYWHERE_LOG=<file> gets each iteration's story as it ends, KILL_ANYWHERE_DUMP=<dir>
 * each server's log (LOG_LEVEL, default info) and, for a failing iteration, every stored event.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertValidHistory } from "../../src/agent/history.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { checkDatabase, type Query } from "../helpers/kill-anywhere/invariants.js";
import { prng, scriptedModel } from "../helpers/kill-anywhere/script.js";
import { allRuns, call, startWorkload, type Target } from "../helpers/kill-anywhere/workload.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";

const ITERATIONS = Number(process.env.KILL_ANYWHERE_ITERATIONS ?? 1);
const BACKENDS = (process.env.KILL_ANYWHERE_BACKENDS ?? "sqlite,postgres").split(",") as ("sqlite" | "postgres")[];
const FIRST_SEED = Number(process.env.KILL_ANYWHERE_SEED ?? Math.floor(Math.random() * 1e9));
const SETTLE_MS = 45_000;

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function killNow(server: ChildServer): Promise<void> {
  server.process.kill("SIGKILL");
  await server.exited;
}

/** Waits for a random instant: some ms, or just after the model's Nth request from now. */
async function randomInstant(random: () => number, maxMs: number): Promise<string> {
  if (random() < 0.5) {
    const ms = Math.floor(random() * maxMs);
    await sleep(ms);
    return `${ms} ms`;
  }
  const n = 1 + Math.floor(random() * 8);
  const after = Math.floor(random() * 30);
  const target = upstream.requests.length + n;
  const deadline = Date.now() + maxMs * 3;
  while (upstream.requests.length < target && Date.now() < deadline) await sleep(2);
  await sleep(after);
  return `${after} ms after model request +${n}`;
}

/** Runs one iteration; resolves with what happened, or throws with the seed and the problems. */
async function iteration(seed: number, backend: "sqlite" | "postgres"): Promise<string> {
  const random = prng(seed);
  upstream.fallback = scriptedModel(prng(seed ^ 0x5bd1e995));
  const dir = tempDir("kill-anywhere-");
  const target: Target = { url: "" };
  const servers: ChildServer[] = [];
  // Over PostgreSQL the restarted server has the same INSTANCE_ID, as a restarted container
  // would: it takes its own runs back at once (another id waits for their leases to expire).
  const database: TestPgDatabase | null = backend === "postgres" ? await createTestPgDatabase() : null;
  const env: Record<string, string> = database ? { DATABASE_URL: database.url, INSTANCE_ID: "kill-anywhere" } : {};
  if (process.env.KILL_ANYWHERE_DUMP) env.LOG_LEVEL = process.env.LOG_LEVEL ?? "info";
  const start = async (extra: Record<string, string> = {}) => {
    const server = await startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env: { ...env, ...extra },
      // A soak shares the machine: a start may be slow, and that is not what is checked here.
      readyMs: 60_000,
    });
    servers.push(server);
    target.url = server.url;
    return server;
  };
  // A server killed while it starts (before or after it is ready, maybe amid its recovery).
  const startAndKill = async (ms: number) => {
    let exited: Promise<unknown> = Promise.resolve();
    const ready = startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env,
      readyMs: 60_000,
      onSpawn: (child) => {
        exited = new Promise((resolve) => child.once("exit", resolve));
        setTimeout(() => child.kill("SIGKILL"), ms);
      },
    });
    const server = await ready.catch(() => null);
    if (server) {
      servers.push(server);
      target.url = server.url;
    }
    await exited;
  };
  const stop = new AbortController();
  const story: string[] = [];
  let failed = true;
  try {
    let server = await start();
    const { acked, jobs } = startWorkload(target, seed, `s${seed}`, stop.signal);
    const kills = random() < 0.5 ? 2 : 1;
    for (let i = 0; i < kills; i++) {
      story.push(`kill ${i + 1} at ${await randomInstant(random, i === 0 ? 700 : 400)}`);
      await killNow(server);
      if (random() < 0.35) {
        const ms = Math.floor(random() * 1500);
        story.push(`killed again ${ms} ms into its restart`);
        await startAndKill(ms);
      }
      // Now and then a restart closes what was live instead of resuming it.
      const abort = random() < 0.2;
      if (abort) story.push("restarted with ON_RESTART=abort");
      server = await start(abort ? { ON_RESTART: "abort" } : {});
    }
    const settling = Date.now();
    await Promise.all(jobs);
    // Settled: every run finished (the approver deciding what awaits), or the deadline.
    const deadline = Date.now() + SETTLE_MS;
    let live = await allRuns(target);
    while (live.some((r) => r.status !== "finished") && Date.now() < deadline) {
      await sleep(50);
      live = await allRuns(target);
    }
    stop.abort();
    const problems = live.filter((r) => r.status !== "finished").map((r) => `run ${r.id} still ${r.status}`);
    for (const sessionId of new Set(live.map((r) => r.sessionId))) {
      const history = await call(target, "GET", `/sessions/${sessionId}/messages?limit=200`);
      try {
        assertValidHistory(history?.body?.items ?? []);
      } catch (err) {
        problems.push(`session ${sessionId} over the API: ${(err as Error).message}`);
      }
    }
    await killNow(server);
    const dump = process.env.KILL_ANYWHERE_DUMP;
    const checked = await readDatabase(dir.path, database, async (query) => {
      const found = await checkDatabase(dir.path, acked, query);
      // Investigating a failure: every event stored, as the runs' streams replay them.
      if (dump && found.problems.length > 0) {
        const events = await query("SELECT run_id, seq, data FROM run_events ORDER BY run_id, seq");
        writeFileSync(join(dump, `${backend}-${seed}-events.jsonl`), events.map((e) => `${e.data}\n`).join(""));
      }
      return found;
    });
    problems.push(...checked.problems);
    story.push(`settled in ${Date.now() - settling} ms: ${checked.summary}`);
    // Investigating: each server's log (LOG_LEVEL from the environment) kept in this folder, failed or not.
    for (const [i, s] of dump ? servers.entries() : [])
      writeFileSync(join(dump as string, `${backend}-${seed}-server-${i + 1}.log`), s.output());
    if (problems.length > 0) {
      const output = servers.map((s, i) => `--- server ${i + 1} ---\n${s.output().slice(-4000)}`).join("\n");
      throw new Error(
        `KILL_ANYWHERE_SEED=${seed} KILL_ANYWHERE_BACKENDS=${backend}: ${story.join("; ")}\ndirectory kept: ${dir.path}\n${problems.join("\n")}\n${output}`,
      );
    }
    failed = false;
    return story.join("; ");
  } finally {
    stop.abort();
    for (const s of servers) if (s.process.exitCode === null && s.process.signalCode === null) await killNow(s);
    if (!failed) {
      dir.cleanup();
      await database?.drop();
    }
  }
}

/** Runs `read` over the settled database: the SQLite file opened read-only, or a PostgreSQL client. */
async function readDatabase<T>(dir: string, database: TestPgDatabase | null, read: (query: Query) => Promise<T>) {
  if (!database) {
    const db = new Database(join(dir, "agent.db"), { readonly: true, fileMustExist: true });
    try {
      return await read(async (sql) => db.prepare(sql).all());
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return await read(async (sql) => (await client.query(sql)).rows);
  } finally {
    await client.end();
  }
}

describe.each(BACKENDS)("kill -9 at random instants, then restart (%s)", (backend) => {
  it.each(Array.from({ length: ITERATIONS }, (_, i) => FIRST_SEED + i))(
    "seed %i: every durability law holds after the restart",
    async (seed) => {
      const log = (line: string) =>
        process.env.KILL_ANYWHERE_LOG && appendFileSync(process.env.KILL_ANYWHERE_LOG, line);
      // Whatever fails names the seed; a soak's log gets each line as it goes (vitest holds a
      // file's console output back until the file ends).
      const story = await iteration(seed, backend).catch((err: Error) => {
        const message = err.message.startsWith("KILL_ANYWHERE_SEED")
          ? err.message
          : `KILL_ANYWHERE_SEED=${seed} KILL_ANYWHERE_BACKENDS=${backend}: ${err.stack}`;
        log(`FAIL ${message}\n`);
        throw new Error(message);
      });
      log(`${backend} seed ${seed}: ${story}\n`);
      expect(story).toBeTruthy();
    },
    SETTLE_MS + 120_000,
  );
});
