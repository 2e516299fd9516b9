/**
 * One server owns a SQLite file (README, DATABASE_PATH): a second server on the same file
 * refuses to start. The owner lock was named after DATABASE_PATH as written
 * (`<path>-lock`), so a second server that reached the same file through a symlink locked
 * another lock file and started: two servers owned one database, each resuming the same runs.
 * Now the lock is named after the file's resolved path, whatever name reaches it.
 */
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const NO_UPSTREAM = "http://127.0.0.1:9/v1";

async function started(server: Promise<ChildServer>): Promise<ChildServer> {
  const s = await server;
  cleanups.push(async () => {
    if (s.process.exitCode === null && s.process.signalCode === null) {
      s.process.kill("SIGKILL");
      await s.exited;
    }
  });
  return s;
}

it("a second server on the same SQLite file reached through a symlink refuses to start", async () => {
  const dir = tempDir();
  cleanups.push(dir.cleanup);
  const real = join(dir.path, "data", "agent.db");
  mkdirSync(join(dir.path, "data"));
  mkdirSync(join(dir.path, "other"));
  const first = await started(
    startChildServer({
      dir: dir.path,
      upstreamURL: NO_UPSTREAM,
      env: { DATABASE_PATH: real, SHELL_SANDBOX: "off" },
    }),
  );
  const alias = join(dir.path, "other", "agent.db");
  symlinkSync(real, alias);

  const second = startChildServer({
    dir: dir.path,
    upstreamURL: NO_UPSTREAM,
    env: { DATABASE_PATH: alias, SHELL_SANDBOX: "off", WORKSPACE_ROOT: join(dir.path, "ws2") },
  });
  const outcome = await second.then(
    (s) => {
      cleanups.push(() => s.process.kill("SIGKILL"));
      return `the second server started and serves ${s.url}`;
    },
    (err: Error) => err.message,
  );
  expect(outcome).toMatch(/in use by another process/);
  expect((await api(first.url, "GET", "/healthz")).status).toBe(200);
});
