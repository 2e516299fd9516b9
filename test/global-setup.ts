import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { runPgMigrations } from "../src/store/pg/pg-migrations.js";
import { databaseUrl, startPgCluster } from "./helpers/pg-cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** A superuser URL to the test PostgreSQL server (TEST_DATABASE_URL, or the throwaway cluster). */
    pgServerUrl: string;
    /** The migrated database each test file's database is created from. */
    pgTemplate: string;
  }
}

/**
 * Builds dist/ (the server and the console) once before the suite (tests that start the real
 * server process use it), and
 * readies PostgreSQL: the server at TEST_DATABASE_URL, or else a throwaway cluster started here
 * and stopped at the end, with a migrated template database for the test files to copy.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], {
    cwd: root,
    stdio: "inherit",
  });
  execFileSync(process.execPath, ["node_modules/vite/bin/vite.js", "build", "--config", "console/vite.config.ts"], {
    cwd: root,
    stdio: "inherit",
  });
  const cluster = process.env.TEST_DATABASE_URL ? null : startPgCluster();
  const serverUrl = process.env.TEST_DATABASE_URL ?? (cluster as { url: string }).url;
  const template = `agent_test_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const pool = new pg.Pool({ connectionString: databaseUrl(serverUrl, template), max: 1 });
  await runPgMigrations(pool);
  await pool.end();
  project.provide("pgServerUrl", serverUrl);
  project.provide("pgTemplate", template);
  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
    await admin.end();
    cluster?.stop();
  };
}
