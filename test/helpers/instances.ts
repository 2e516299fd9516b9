import pg from "pg";
import { expect } from "vitest";
import type { FakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer } from "./child-server.js";
import { createTestPgDatabase, type TestPgDatabase } from "./pg-database.js";
import { tempDir } from "./temp-dir.js";

/** Server processes over one PostgreSQL database, sharing one data directory (the workspace volume). */
export interface Instances {
  servers: ChildServer[];
  database: TestPgDatabase;
  /** The data directory every server uses (its `workspaces/` is the shared WORKSPACE_ROOT). */
  dir: string;
  /** Runs one query on the test database. */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

export async function startInstances({
  count,
  upstream,
  env = {},
}: {
  count: number;
  upstream: FakeUpstream;
  env?: Record<string, string>;
}): Promise<Instances> {
  const database = await createTestPgDatabase();
  const dir = tempDir("instances-");
  const servers: ChildServer[] = [];
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const stop = async () => {
    for (const server of servers) {
      if (server.process.exitCode === null && server.process.signalCode === null) server.process.kill("SIGKILL");
      await server.exited;
    }
    await client.end().catch(() => {});
    await database.drop();
    dir.cleanup();
  };
  // Started together, as a deployment's instances may be (each migrates under an advisory lock).
  const settled = await Promise.allSettled(
    Array.from({ length: count }, () =>
      startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL, env: { DATABASE_URL: database.url, ...env } }),
    ),
  );
  for (const result of settled) if (result.status === "fulfilled") servers.push(result.value);
  const failed = settled.find((result) => result.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    servers,
    database,
    dir: dir.path,
    query: async (text, values) => (await client.query(text, values)).rows,
    stop,
  };
}

/**
 * The values of processes started together, once each has started; if one fails, its reason,
 * thrown only once every other start has settled (so each started one is known, to be stopped).
 */
export async function allStarted<T extends unknown[]>(
  starts: readonly [...{ [K in keyof T]: Promise<T[K]> }],
): Promise<T> {
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((result): result is PromiseRejectedResult => result.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as T;
}

/** Checks a stream's events are the run's events 1..n in order (none missing, none twice), ending with run.finished. */
export function expectWholeRun(events: { id: string | undefined; event: string }[]): void {
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
  expect(events.at(-1)?.event).toBe("run.finished");
}
