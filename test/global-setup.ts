import { spawn } from "node:child_process";
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

/** Runs a Node script of the repository to its end; rejects naming it unless it exits 0. */
function runNode(root: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: "inherit" });
    child.on("error", reject);
    child.on("exit", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(" ")} failed (${signal ?? `exit ${code}`})`)),
    );
  });
}

/**
 * Builds dist/ (the server and the console) once before the suite (tests that start the real
 * server process use it), and
 * readies PostgreSQL: the server at TEST_DATABASE_URL, or else a throwaway cluster started here
 * and stopped at the end, with a migrated template database for the test files to copy.
 * The two builds and PostgreSQL's start do not depend on one another: they run at once, and
 * no test file starts before all three are done.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const builds = Promise.all([
    runNode(root, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"]),
    runNode(root, ["node_modules/vite/bin/vite.js", "build", "--config", "console/vite.config.ts"]),
  ]);
  // Settled here too, so a failed build is not an unhandled rejection while PostgreSQL starts.
  builds.catch(() => {});
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
  try {
    await builds;
  } catch (err) {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
    await admin.end();
    cluster?.stop();
    throw err;
  }
  project.provide("pgServerUrl", serverUrl);
  project.provide("pgTemplate", template);
  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
    await admin.end();
    cluster?.stop();
  };
}
