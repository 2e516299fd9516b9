import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import { errnoCode, isOutOfDescriptors } from "../errno.js";
import { closeDir, dirPath, type OpenDir, openDirAt } from "./open-dir.js";

/** Directory names never listed or searched: noise for the model, and often huge. */
export const HIDDEN_DIRECTORY_NAMES: ReadonlySet<string> = new Set([".git", "node_modules"]);

export type WalkEntryKind = "directory" | "file" | "symlink" | "other";

export interface WalkEntry {
  /** Path relative to the workspace root, `/`-separated. */
  relative: string;
  /** Path components relative to the start directory. */
  segments: string[];
  name: string;
  kind: WalkEntryKind;
  /** 1 for the start directory's own entries. */
  depth: number;
}

const kindOf = (entry: Dirent): WalkEntryKind =>
  entry.isDirectory() ? "directory" : entry.isFile() ? "file" : entry.isSymbolicLink() ? "symlink" : "other";

const byName = (a: Dirent, b: Dirent): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Walks the open directory `start` (at `relative` in the workspace, "." for the root)
 * depth-first, each directory's entries sorted by name (code points), each directory followed
 * by its contents. Every directory is listed through a descriptor opened inside its parent's
 * without following a link, so a directory swapped for a symlink mid-walk is skipped, never
 * entered. Symlinks are reported, never followed; `.git` and `node_modules` are skipped
 * entirely; directories below `maxDepth` are not entered; unreadable directories are skipped,
 * but a directory that cannot be opened or read for lack of file descriptors (EMFILE, ENFILE)
 * throws that error: skipping it would make the walk look complete without its contents.
 * Stop early by breaking out of the loop (the directories it opened are closed). `start`
 * stays the caller's to close.
 */
export async function* walk({
  start,
  relative,
  maxDepth,
}: {
  start: OpenDir;
  relative: string;
  maxDepth: number;
}): AsyncGenerator<WalkEntry> {
  yield* walkDir(start, relative === "." ? "" : `${relative}/`, [], 1, maxDepth);
}

async function* walkDir(
  dir: OpenDir,
  prefix: string,
  segments: string[],
  depth: number,
  maxDepth: number,
): AsyncGenerator<WalkEntry> {
  let entries: Dirent[];
  try {
    entries = await readdir(dirPath(dir), { withFileTypes: true });
  } catch (err) {
    if (isOutOfDescriptors(errnoCode(err))) throw err;
    return;
  }
  entries.sort(byName);
  for (const entry of entries) {
    if (HIDDEN_DIRECTORY_NAMES.has(entry.name)) continue;
    const kind = kindOf(entry);
    const here = [...segments, entry.name];
    yield { relative: prefix + here.join("/"), segments: here, name: entry.name, kind, depth };
    if (kind !== "directory" || depth >= maxDepth) continue;
    const sub = await openDirAt(dir, entry.name).catch(skipUnlessOutOfDescriptors);
    if (!sub) continue;
    try {
      yield* walkDir(sub, prefix, here, depth + 1, maxDepth);
    } finally {
      await closeDir(sub);
    }
  }
}

/** A directory that cannot be opened is skipped (null), unless the process has no descriptor left for it. */
function skipUnlessOutOfDescriptors(err: unknown): null {
  if (isOutOfDescriptors(errnoCode(err))) throw err;
  return null;
}
