import { fstatSync } from "node:fs";
import type { OpenDir } from "./open-dir.js";

/** The edits under way or waiting, by file (see withFileLock): the last one's settling. */
const tails = new Map<string, Promise<void>>();

/**
 * Runs `edit` once every edit of the same file (entry `name` of the open directory `dir`,
 * named by the directory's device and inode, whatever path reached it) started before it in
 * this process has settled, so that a read-modify-write is not lost to another's rename:
 * two sessions sharing a workspace, say. Edits of other files do not wait. Another process
 * (a shell command, another instance over a shared volume) is not held by it.
 */
export async function withFileLock<T>(dir: OpenDir, name: string, edit: () => Promise<T>): Promise<T> {
  const { dev, ino } = fstatSync(dir.fd);
  const key = `${dev}:${ino}/${name}`;
  const before = tails.get(key);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  tails.set(key, mine);
  try {
    if (before) await before;
    return await edit();
  } finally {
    release();
    if (tails.get(key) === mine) tails.delete(key);
  }
}
