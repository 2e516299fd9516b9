import { existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MIGRATION_LOCK } from "../../src/store/pg/pg-migrations.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, freePort, startChildServer, startRefused } from "../helpers/child-server.js";
import { databaseUrl } from "../helpers/pg-cluster.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";

describe("DATABASE_URL selects PostgreSQL", () => {
  const dir = tempDir("pg-start-");
  let database: TestPgDatabase;
  beforeAll(async () => {
    database = await createTestPgDatabase();
  });
  afterAll(async () => {
    await database?.drop();
    dir.cleanup();
  });

  it("a server over PostgreSQL keeps sessions and runs there, and writes no SQLite file", async () => {
    const upstream = await startFakeUpstream();
    upstream.enqueue({ text: "hello from postgres" });
    const server = await startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env: { DATABASE_URL: database.url },
    });
    try {
      const session = await api(server.url, "POST", "/sessions", {});
      expect(session.status).toBe(201);
      const run = await api(server.url, "POST", `/sessions/${session.body.id}/runs?wait=true`, { input: "hi" });
      expect(run.body).toMatchObject({
        run: { status: "finished", stopReason: "complete" },
        text: "hello from postgres",
      });
      const again = await api(server.url, "GET", `/runs/${run.body.run.id}`);
      expect(again.body.status).toBe("finished");
      expect(existsSync(join(dir.path, "agent.db"))).toBe(false);
    } finally {
      server.process.kill("SIGTERM");
      await server.exited;
      await upstream.close();
    }
  });

  it("a start finding the migration lock held says which PostgreSQL connection holds it, and starts once it is released", async () => {
    // What an instance stopped (SIGSTOP, a hung host) while migrating leaves: the lock held by a live connection.
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    await holder.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    const holderPid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
    const upstream = await startFakeUpstream();
    let seen = "";
    const starting = startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env: { DATABASE_URL: database.url },
      onOutput: (text) => {
        seen += text;
      },
    });
    starting.catch(() => {});
    try {
      const deadline = Date.now() + 10_000;
      while (!seen.includes("migration lock") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toMatch(
        new RegExp(
          `waiting \\d+ s for the PostgreSQL migration lock, held by PostgreSQL backend ${holderPid} \\(.*\\): another instance is migrating, or one that holds the lock is stopped or hung \\(then SELECT pg_terminate_backend\\(${holderPid}\\) releases it\\)`,
        ),
      );
    } finally {
      await holder.end();
    }
    const server = await starting;
    try {
      expect((await api(server.url, "GET", "/healthz")).status).toBe(200);
    } finally {
      server.process.kill("SIGTERM");
      await server.exited;
      await upstream.close();
    }
  });

  it("a database that does not exist, an unknown role or a refused connection: exit 2 naming DATABASE_URL and the server's reason", async () => {
    const server = inject("pgServerUrl");
    const missing = startRefused(dir.path, { DATABASE_URL: databaseUrl(server, "no_such_database") });
    expect(missing.status).toBe(2);
    expect(missing.output).toMatch(
      /DATABASE_URL: cannot use postgres:\/\/.*no_such_database.*: database "no_such_database" does not exist/,
    );
    expect(missing.output).not.toMatch(/\n\s+at /);

    const role = startRefused(dir.path, {
      DATABASE_URL: databaseUrl(server, "postgres").replace(/^postgres:\/\/[^@]*@/, "postgres://nobody_here@"),
    });
    expect(role.status).toBe(2);
    expect(role.output).toMatch(/DATABASE_URL: .*role "nobody_here" does not exist/);

    const port = await freePort();
    const refused = startRefused(dir.path, { DATABASE_URL: `postgres://agent:hunter2-secret@127.0.0.1:${port}/agent` });
    expect(refused.status).toBe(2);
    expect(refused.output).toMatch(
      new RegExp(`DATABASE_URL: cannot use postgres://agent@127.0.0.1:${port}/agent: .*ECONNREFUSED`),
    );
    expect(refused.output).not.toContain("hunter2-secret");

    const notPostgres = startRefused(dir.path, { DATABASE_URL: "mysql://localhost/agent" });
    expect(notPostgres.status).toBe(2);
    expect(notPostgres.output).toMatch(/DATABASE_URL: must be a postgres:\/\//);
  });
});
