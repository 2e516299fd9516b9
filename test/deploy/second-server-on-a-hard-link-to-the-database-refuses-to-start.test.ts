/**
 * README (DATABASE_PATH, Durability): "One server owns the file: it holds a lock on
 * `<file>-lock` beside the file DATABASE_PATH resolves to (symlinks followed) while it runs,
 * and a second server on the same file, by whatever path, refuses to start."
 *
 * The owner lock is named after the resolved *path* (store/owner-lock-path.ts), not the file's
 * identity: a hard link (or a file bind-mounted under another name) reaches the same inode by
 * a path whose `-lock` sidecar is a different file. The second server takes that other lock and
 * starts, and SQLite's WAL and shared-memory index are named after the path too
 * (`<name>-wal`, `<name>-shm`), so the two servers write one database file through two WALs
 * that know nothing of each other: each resumes the same runs, and what one commits the other
 * never sees (the checkpoints of both copy their own pages over the other's).
 *
 * Now a database file with more than one name is refused at start (store/hard-links.ts):
 * exit 2, one line naming DATABASE_PATH and why.
 */
import type { ChildProcess } from "node:child_process";
import { linkSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const NO_UPSTREAM = "http://127.0.0.1:9/v1";

function killAtEnd(s: ChildServer): ChildServer {
  cleanups.push(async () => {
    if (s.process.exitCode === null && s.process.signalCode === null) {
      s.process.kill("SIGKILL");
      await s.exited;
    }
  });
  return s;
}

it("a second server on the same SQLite file reached through a hard link refuses to start", async () => {
  const dir = tempDir();
  cleanups.push(dir.cleanup);
  mkdirSync(join(dir.path, "data"));
  const real = join(dir.path, "data", "agent.db");
  const first = killAtEnd(
    await startChildServer({
      dir: dir.path,
      upstreamURL: NO_UPSTREAM,
      env: { DATABASE_PATH: real, SHELL_SANDBOX: "off" },
    }),
  );
  // Another name for the very same file (same inode).
  const alias = join(dir.path, "data", "alias.db");
  linkSync(real, alias);

  let second: ChildServer | null = null;
  let spawned: ChildProcess | null = null;
  const outcome = await startChildServer({
    dir: dir.path,
    upstreamURL: NO_UPSTREAM,
    env: { DATABASE_PATH: alias, SHELL_SANDBOX: "off", WORKSPACE_ROOT: join(dir.path, "ws2") },
    onSpawn: (child) => {
      spawned = child;
    },
  }).then(
    (s) => {
      second = killAtEnd(s);
      return `the second server started and serves ${s.url}`;
    },
    (err: Error) => err.message,
  );
  if (second) {
    // What two owners of one file do: a session created through one is not there through the other.
    const created = (await api(first.url, "POST", "/sessions", {})).body;
    const seenBySecond = await api((second as ChildServer).url, "GET", `/sessions/${created.id}`);
    expect.soft(seenBySecond.status, "a session the first server stored, read through the second").toBe(200);
  }
  expect(outcome).toMatch(/DATABASE_PATH: cannot use .*alias\.db: the database file .* has 2 names \(hard links\)/);
  expect((spawned as ChildProcess | null)?.exitCode).toBe(2);
  expect((await api(first.url, "GET", "/healthz")).status).toBe(200);
});
