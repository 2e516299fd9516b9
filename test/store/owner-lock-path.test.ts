/**
 * The SQLite owner lock (openDatabase) is named after the file DATABASE_PATH resolves to, so
 * every name that reaches one database file takes one lock. It was named after the path as
 * written (`<path>-lock`): a store opened through a symlink to an open database took a lock
 * of its own and opened it too.
 */
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { ownerLockPath } from "../../src/store/owner-lock-path.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dir(): string {
  const made = tempDir("owner-lock-");
  cleanups.push(made.cleanup);
  return made.path;
}

it("a symlink to the file, a symlinked directory and `..` name the lock beside the file itself", () => {
  const root = dir();
  mkdirSync(join(root, "data"));
  const real = join(root, "data", "agent.db");
  const expected = ownerLockPath(real);
  symlinkSync(join(root, "data"), join(root, "linked-dir"));
  // Before the file exists: through its directory, and through a symlink that names it.
  symlinkSync(real, join(root, "dangling.db"));
  const names = [join(root, "linked-dir", "agent.db"), join(root, "data", "..", "data", "agent.db")];
  for (const name of [...names, join(root, "dangling.db")]) expect(ownerLockPath(name), name).toBe(expected);
  const store = openSqliteStore({ path: join(root, "dangling.db") });
  cleanups.push(() => store.close());
  symlinkSync(real, join(root, "alias.db"));
  for (const name of [...names, join(root, "dangling.db"), join(root, "alias.db")]) {
    expect(ownerLockPath(name), name).toBe(expected);
  }
});

it("a store opened through a symlink to an open database is refused while the first is open", async () => {
  const root = dir();
  const real = join(root, "agent.db");
  const first: Store = openSqliteStore({ path: real });
  cleanups.push(() => first.close());
  symlinkSync(real, join(root, "alias.db"));
  expect(() => openSqliteStore({ path: join(root, "alias.db") })).toThrow(/in use by another process/);
  expect(first.fileProblem?.()).toBeNull();
});
