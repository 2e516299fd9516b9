import { statSync } from "node:fs";
import { StorageError } from "./errors.js";

/**
 * Refuses a SQLite file at `path` that has more than one name (a hard link: st_nlink above 1),
 * with StorageError `unavailable` naming the file, the count and what to do; a missing file
 * (not made yet) or one that is not a regular file passes.
 *
 * Why: the owner lock (ownerLockPath) and SQLite's WAL and shared-memory index
 * (`<name>-wal`, `<name>-shm`) are named after the path, not the file. A server on another
 * name of the file takes another lock and writes the one file through a WAL of its own,
 * which the other server never reads: lost writes, a corrupt file, two servers resuming the
 * same runs (SQLite's own documentation lists multiple links to a database as a way to
 * corrupt it). Every server on any name of a linked file is refused, the first one too when
 * it restarts: which name is "the" database cannot be told.
 *
 * Contract: checked at open only (see openDatabase: before the owner lock is taken, and again
 * once the file is open, for a link made in between). A name added while a server runs is not
 * noticed by it; the next start on any of the names is refused. Names the link count does not
 * show are not caught: the file bind-mounted under another name, or reached over two network
 * mounts.
 */
export function refuseHardLinks(path: string): void {
  let links: number;
  try {
    const stats = statSync(path);
    if (!stats.isFile()) return;
    links = stats.nlink;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  if (links <= 1) return;
  throw new StorageError(
    "unavailable",
    `the database file ${path} has ${links} names (hard links), and a server started on another name would write it through a WAL of its own and corrupt it: remove the other names (find -samefile lists them) or give the server a copy of the file`,
  );
}
