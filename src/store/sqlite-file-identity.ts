import { type Stats, statSync } from "node:fs";
import { ownerLockPath } from "./owner-lock-path.js";

/** A file as the server opened it: its path and the file it named then. */
interface Opened {
  path: string;
  what: string;
  dev: number;
  ino: number;
}

const identity = (path: string, what: string): Opened => {
  const { dev, ino } = statSync(path);
  return { path, what, dev, ino };
};

/**
 * The store's `fileProblem` for the SQLite file at `path`, opened just now (see
 * SqliteFileIdentity): `onProblem` is told of the first problem it finds, once.
 */
export function fileProblemOf(path: string, onProblem?: (problem: string) => void): () => string | null {
  const files = new SqliteFileIdentity(path);
  let reported = false;
  return () => {
    const problem = files.problem();
    if (problem && !reported) onProblem?.(problem);
    reported ||= problem !== null;
    return problem;
  };
}

/**
 * Whether the SQLite file and its lock file (see ownerLockPath and openDatabase) are still the
 * files their paths name, recorded when they were opened. A file deleted or replaced under the
 * server goes unnoticed by SQLite: its writes go on to the open file, which no path names any
 * more (lost at the next start, which creates a new database there), and without the lock file
 * a second server can start on the same path. `problem()` names what happened, or is null.
 */
export class SqliteFileIdentity {
  readonly #files: Opened[];

  constructor(path: string) {
    this.#files = [identity(path, "database file"), identity(ownerLockPath(path), "lock file")];
  }

  problem(): string | null {
    for (const file of this.#files) {
      let now: Stats;
      try {
        now = statSync(file.path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") continue;
        return `the ${file.what} ${file.path} was deleted while the server runs: ${consequence(file)}`;
      }
      if (now.ino !== file.ino || now.dev !== file.dev) {
        return `the ${file.what} ${file.path} was replaced by another file while the server runs: ${consequence(file)}`;
      }
    }
    return null;
  }
}

const consequence = (file: Opened): string =>
  file.what === "database file"
    ? "what it writes from now on is lost when it stops (restart it on a restored file)"
    : "another server could start on the same database (restart this one to lock it again)";
