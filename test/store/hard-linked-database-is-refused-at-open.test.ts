/**
 * A SQLite file with a second name (a hard link) is refused at open (see refuseHardLinks):
 * the owner lock and SQLite's `-wal`/`-shm` are named after the path, so a server on the other
 * name would take another lock and write the one file through a WAL of its own. Every name is
 * refused, the one a store already ran on too (a restart after the link was made), and
 * nothing is created beside a refused name.
 */
import { existsSync, linkSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openStoreOrExplain } from "../../src/startup-checks.js";
import { StorageError } from "../../src/store/errors.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dir(): string {
  const made = tempDir("hard-link-");
  cleanups.push(made.cleanup);
  return made.path;
}

it("a store on another name of an open database is refused, and leaves no lock file beside that name", async () => {
  const root = dir();
  const real = join(root, "agent.db");
  const first = openSqliteStore({ path: real });
  cleanups.push(() => first.close());
  const alias = join(root, "alias.db");
  linkSync(real, alias);

  let refused: unknown;
  try {
    openSqliteStore({ path: alias });
  } catch (err) {
    refused = err;
  }
  expect(refused).toBeInstanceOf(StorageError);
  expect((refused as StorageError).kind).toBe("unavailable");
  expect((refused as Error).message).toContain(`the database file ${alias} has 2 names (hard links)`);
  for (const beside of ["-lock", "-wal", "-shm"]) expect(existsSync(alias + beside), beside).toBe(false);
  expect(first.fileProblem?.()).toBeNull();
});

it("the name a store ran on is refused too while another name exists, and opens once it is gone", async () => {
  const root = dir();
  const real = join(root, "agent.db");
  const first = openSqliteStore({ path: real });
  await first.close();
  const alias = join(root, "alias.db");
  linkSync(real, alias);

  expect(() => openSqliteStore({ path: real })).toThrow(/has 2 names \(hard links\)/);
  // At start: one line naming the variable (the server exits 2 with it).
  expect(() => openStoreOrExplain(real)).toThrow(
    new RegExp(`DATABASE_PATH: cannot use ${real}: the database file ${real} has 2 names`),
  );

  unlinkSync(alias);
  const reopened = openSqliteStore({ path: real });
  cleanups.push(() => reopened.close());
  expect(reopened.fileProblem?.()).toBeNull();
});
