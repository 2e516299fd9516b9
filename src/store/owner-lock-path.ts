import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

/** Symlinks followed at most, as the kernel does (ELOOP past it). */
const MAX_LINKS = 40;

/**
 * The path of the owner lock of the SQLite file at `path` (see openDatabase): `<file>-lock`
 * beside the file `path` resolves to, so every name that reaches one database file (a
 * symlink to it, a symlinked directory, `..`) names one lock. A file not made yet resolves
 * through its directory, which must exist, and through a symlink to it (SQLite creates the
 * file the symlink names): the lock is the same before and after the file is made.
 */
export function ownerLockPath(path: string): string {
  return `${resolvedFile(path)}-lock`;
}

function resolvedFile(path: string): string {
  let at = resolve(path);
  for (let links = 0; ; links++) {
    try {
      return realpathSync(at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    const dir = realpathSync(dirname(at));
    const name = join(dir, basename(at));
    if (links === MAX_LINKS || !isSymlink(name)) return name;
    at = resolve(dir, readlinkSync(name));
  }
}

const isSymlink = (path: string): boolean => {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
};
