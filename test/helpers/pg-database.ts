import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { databaseUrl } from "./pg-cluster.js";

export interface TestPgDatabase {
  url: string;
  /** Drops the database (its connections closed first). */
  drop(): Promise<void>;
}

/** Runs one statement as the test server's superuser. */
async function asAdmin(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: inject("pgServerUrl") });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

let fileCopy: Promise<boolean> | null = null;

/**
 * Whether the server copies a database as files when told (PostgreSQL 15 on): a checkpoint,
 * cheap without fsync as on the suite's own server, instead of every block of the template
 * through the WAL (15's default), the same database in under half the time.
 */
function fileCopyStrategy(): Promise<boolean> {
  fileCopy ??= (async () => {
    const admin = new pg.Client({ connectionString: inject("pgServerUrl") });
    await admin.connect();
    try {
      return Number((await admin.query("SHOW server_version_num")).rows[0].server_version_num) >= 150000;
    } finally {
      await admin.end();
    }
  })();
  return fileCopy;
}

/** A new database, already migrated (a copy of the suite's template), for one test file or test. */
export async function createTestPgDatabase(): Promise<TestPgDatabase> {
  const name = `agent_test_${randomBytes(6).toString("hex")}`;
  const strategy = (await fileCopyStrategy()) ? " STRATEGY FILE_COPY" : "";
  // Copies of one template made at once may find it busy for a moment: tried again.
  for (let attempt = 0; ; attempt++) {
    try {
      await asAdmin(`CREATE DATABASE ${name} TEMPLATE ${inject("pgTemplate")}${strategy}`);
      break;
    } catch (err) {
      if (attempt >= 20 || (err as { code?: string }).code !== "55006") throw err;
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
    }
  }
  return {
    url: databaseUrl(inject("pgServerUrl"), name),
    drop: () => asAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * A pool on `url` whose connections pipeline, as the server's own (openPgStore): what
 * createPgStore requires.
 */
export function pipelinedPool(url: string, max: number): pg.Pool {
  return new pg.Pool({ connectionString: url, max, pipeline: true } as pg.PoolConfig);
}
