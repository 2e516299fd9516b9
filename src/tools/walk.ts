import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { workspaceRelative } from "./paths.js";

/** Directory names never listed or searched: noise for the model, and often huge. */
export const HIDDEN_DIRECTORY_NAMES: ReadonlySet<string> = new Set([".git", "node_modules"]);

export type EntryKind = "directory" | "file" | "symlink" | "other";

export interface WalkEntry {
  /** Absolute path. */
  path: string;
  /** Path relative to the workspace root, `/`-separated. */
  relative: string;
  name: string;
  kind: EntryKind;
  /** 1 for the start directory's own entries. */
  depth: number;
}

const kindOf = (entry: Dirent): EntryKind =>
  entry.isDirectory() ? "directory" : entry.isFile() ? "file" : entry.isSymbolicLink() ? "symlink" : "other";

const byName = (a: Dirent, b: Dirent): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Walks `start` depth-first, each directory's entries sorted by name (code points), each
 * directory followed by its contents. Symlinks are reported, never followed (no escapes,
 * no loops); `.git` and `node_modules` are skipped entirely; directories below `maxDepth`
 * are not entered; unreadable directories are skipped. Stop early by breaking out of the loop.
 */
export async function* walk({
  root,
  start,
  maxDepth,
}: {
  root: string;
  start: string;
  maxDepth: number;
}): AsyncGenerator<WalkEntry> {
  yield* walkDir(root, start, 1, maxDepth);
}

async function* walkDir(root: string, dir: string, depth: number, maxDepth: number): AsyncGenerator<WalkEntry> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort(byName);
  for (const entry of entries) {
    if (HIDDEN_DIRECTORY_NAMES.has(entry.name)) continue;
    const path = join(dir, entry.name);
    const kind = kindOf(entry);
    yield { path, relative: workspaceRelative(root, path), name: entry.name, kind, depth };
    if (kind === "directory" && depth < maxDepth) yield* walkDir(root, path, depth + 1, maxDepth);
  }
}
