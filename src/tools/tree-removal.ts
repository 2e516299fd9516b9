import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  opendirSync,
  openSync,
  renameSync,
  rmdirSync,
  unlinkSync,
} from "node:fs";
import { lstat, rm } from "node:fs/promises";
import { join } from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { errnoCode } from "../errno.js";
import { closeDir, dirPath, entryPath, FD_DIR, type OpenDir } from "./open-dir.js";

/** Linux's O_PATH (absent from fs.constants): a handle on the inode itself, whatever its modes. */
const O_PATH = 0o10000000;
/** A directory's entry, opened without following a link there, to read its mode and chmod it. */
const O_INODE = O_PATH | constants.O_NOFOLLOW | constants.O_DIRECTORY;
/** The directories a removal holds open at once: the tree's root and one per level below it. */
export const MAX_HELD_DIRS = 32;
/** Names read from a directory at a time (each batch removed before the next is read). */
const BATCH = 512;
/** Filesystem calls made between two yields to the event loop. */
const CALLS_PER_SLICE = 256;
/** Tries of an entry that another process keeps swapping between a file and a directory. */
const TRIES = 3;

interface Removal {
  /** The tree's root, held open: deeper subtrees are moved up into it. */
  top: OpenDir;
  calls: number;
}

/**
 * Removes the entry `name` of directory `parent` with everything in it; false when there is
 * none. The tree is walked by open directory descriptors (`/proc/self/fd/<fd>/<name>`), so
 * its depth and the length of its paths do not matter (a path longer than PATH_MAX is no
 * ENAMETOOLONG), nor its modes: a directory of the process's user that it may not read,
 * search or write is given owner rwx first (as its owner may, when not root). Nothing is
 * ever followed: a symlink inside (or a directory swapped for one meanwhile) is unlinked, so
 * nothing outside the tree is touched. At most MAX_HELD_DIRS descriptors are held: a subtree
 * deeper than that is moved up into the tree's root (under a `.rm-*` name) and removed from
 * there. The walk yields to the event loop every CALLS_PER_SLICE calls. Throws on the first
 * entry that cannot be removed, leaving the rest. Off Linux (no /proc/self/fd), fs.rm does it.
 */
export async function removeTree({ parent, name }: { parent: string; name: string }): Promise<boolean> {
  if (FD_DIR === null) {
    const path = join(parent, name);
    if (!(await exists(path))) return false;
    await rm(path, { recursive: true, force: true });
    return true;
  }
  const dir: OpenDir = { fd: openSync(parent, constants.O_RDONLY | constants.O_DIRECTORY), path: parent };
  try {
    let isDir: boolean;
    try {
      isDir = lstatSync(entryPath(dir, name)).isDirectory();
    } catch (err) {
      if (errnoCode(err) === "ENOENT") return false;
      throw err;
    }
    await removeEntry({ dir, name, isDir, depth: 0, removal: null });
    return true;
  } finally {
    await closeDir(dir);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes `name` in `dir` (at `depth` below the tree's root, 0 for the root itself), a
 * directory when `isDir` says so (as the listing typed it): an entry found to be the other
 * kind is tried again as that kind. One already gone counts as removed.
 */
async function removeEntry({
  dir,
  name,
  isDir,
  depth,
  removal,
}: {
  dir: OpenDir;
  name: string;
  isDir: boolean;
  depth: number;
  removal: Removal | null;
}): Promise<void> {
  let asDir = isDir;
  for (let tried = 1; ; tried++) {
    try {
      if (!asDir) unlinkSync(entryPath(dir, name));
      else if (removal !== null && depth >= MAX_HELD_DIRS) moveUp({ dir, name, top: removal.top });
      else await removeDirectory({ dir, name, depth, removal });
      return;
    } catch (err) {
      const code = errnoCode(err);
      if (code === "ENOENT") return;
      // A directory unlinked (EISDIR, or EPERM as POSIX allows), a non-directory opened as one.
      const otherKind = asDir ? code === "ENOTDIR" || code === "ELOOP" : code === "EISDIR" || code === "EPERM";
      if (!otherKind || tried === TRIES) throw err;
      asDir = !asDir;
    }
  }
}

/** Opens the directory `name` in `dir`, empties it, closes it and removes it. */
async function removeDirectory({
  dir,
  name,
  depth,
  removal,
}: {
  dir: OpenDir;
  name: string;
  depth: number;
  removal: Removal | null;
}): Promise<void> {
  const opened = openRemovable(dir, name);
  try {
    const within = removal ?? { top: opened, calls: 0 };
    await empty({ dir: opened, depth, removal: within });
  } finally {
    await closeDir(opened);
  }
  rmdirSync(entryPath(dir, name));
}

/** Removes every entry of `dir` (including, in the tree's root, the subtrees moved up into it). */
async function empty({ dir, depth, removal }: { dir: OpenDir; depth: number; removal: Removal }): Promise<void> {
  for (;;) {
    const entries = readBatch(dir);
    if (entries.length === 0) return;
    for (const entry of entries) {
      if (++removal.calls % CALLS_PER_SLICE === 0) await yieldToLoop();
      await removeEntry({ dir, name: entry.name, isDir: entry.isDir, depth: depth + 1, removal });
    }
  }
}

/** Up to BATCH entries of `dir`, read through a descriptor of its own, closed before they are removed. */
function readBatch(dir: OpenDir): { name: string; isDir: boolean }[] {
  const listing = opendirSync(dirPath(dir), { bufferSize: 64 });
  try {
    const entries: { name: string; isDir: boolean }[] = [];
    for (let entry = listing.readSync(); entry !== null; entry = listing.readSync()) {
      entries.push({ name: entry.name, isDir: entry.isDirectory() });
      if (entries.length === BATCH) break;
    }
    return entries;
  } finally {
    listing.closeSync();
  }
}

/**
 * The directory `name` in `dir` opened for reading, given owner rwx first when it lacks any
 * (through an O_PATH handle on the directory itself: chmod never reaches past a link).
 */
function openRemovable(dir: OpenDir, name: string): OpenDir {
  const inode = openSync(entryPath(dir, name), O_INODE);
  try {
    grantOwner(inode);
    return {
      fd: openSync(`${FD_DIR}/${inode}`, constants.O_RDONLY | constants.O_DIRECTORY),
      path: join(dir.path, name),
    };
  } finally {
    closeSync(inode);
  }
}

/** Adds owner rwx to the directory open as `inode` when it lacks any; one not the process's own is left as it is. */
function grantOwner(inode: number): void {
  const { mode } = fstatSync(inode);
  if ((mode & 0o700) === 0o700) return;
  try {
    chmodSync(`${FD_DIR}/${inode}`, (mode & 0o7777) | 0o700);
  } catch (err) {
    // Not its owner: the removal's next call says what is refused.
    if (errnoCode(err) !== "EPERM") throw err;
  }
}

/**
 * Moves the directory `name` in `dir` into the tree's root under a fresh name, where it is
 * removed with fewer directories above it. A directory moved to another parent must be
 * writable (its `..` changes), so it is given owner rwx first.
 */
function moveUp({ dir, name, top }: { dir: OpenDir; name: string; top: OpenDir }): void {
  const inode = openSync(entryPath(dir, name), O_INODE);
  try {
    grantOwner(inode);
  } finally {
    closeSync(inode);
  }
  renameSync(entryPath(dir, name), entryPath(top, `.rm-${randomBytes(8).toString("hex")}`));
}
