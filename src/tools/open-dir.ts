import { closeSync, constants, existsSync, fsync, openSync } from "node:fs";
import { join } from "node:path";

/**
 * Where the kernel lists this process's descriptors. `<FD_DIR>/<fd>/<name>` names `name`
 * inside the directory open as `fd`, whatever has since happened to the path it was opened
 * by: the emulation of openat() that keeps the workspace boundary race-free. Null off Linux,
 * where entries are named by path (the boundary then holds only against static links).
 */
export const FD_DIR: string | null =
  process.platform === "linux" && existsSync("/proc/self/fd") ? "/proc/self/fd" : null;

/**
 * A directory held open: later operations go through `fd`, `path` says where it was when
 * opened; whoever opens one closes it with closeDir. A plain descriptor, opened and closed
 * synchronously: a metadata call on a directory of the local workspace root takes
 * microseconds, where a FileHandle or the thread pool's round trip costs the event loop
 * several times the call itself (and the SQLite store writes to local disk synchronously too).
 */
export interface OpenDir {
  fd: number;
  path: string;
}

export const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** Opens a regular file for reading without following a link, and without blocking on a FIFO. */
export const O_FILE = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** The name of the directory itself, for readdir and for other processes (bwrap). */
export const dirPath = (dir: OpenDir): string => (FD_DIR ? `${FD_DIR}/${dir.fd}` : dir.path);

/** The name of entry `name` (one path component) inside `dir`, as the kernel reaches it through the open directory. */
export const entryPath = (dir: OpenDir, name: string): string =>
  FD_DIR ? `${FD_DIR}/${dir.fd}/${name}` : join(dir.path, name);

/** Opens `path` as a directory without following a link there (O_DIR): its descriptor. */
export function openDirFd(path: string): Promise<number> {
  try {
    return Promise.resolve(openSync(path, O_DIR));
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Opens the directory `name` inside `dir`, refusing a symlink there (ENOTDIR, as for a
 * file: the caller looks again with lstat).
 */
export async function openDirAt(dir: OpenDir, name: string): Promise<OpenDir> {
  return { fd: await openDirFd(entryPath(dir, name)), path: join(dir.path, name) };
}

/** Closes the directory; never rejects (a descriptor that fails to close is gone anyway). */
export function closeDir(dir: OpenDir): Promise<void> {
  try {
    closeSync(dir.fd);
  } catch {
    // EBADF or EIO: the descriptor is released either way.
  }
  return Promise.resolve();
}

/**
 * Flushes the directory's entries (fsync on its descriptor, in the thread pool). A file
 * system that cannot flush a directory (EINVAL, as some network ones answer) has nothing
 * more to give: the entry is written all the same.
 */
export function syncDir(dir: OpenDir): Promise<void> {
  return new Promise((resolve, reject) => {
    fsync(dir.fd, (err) => (err && err.code !== "EINVAL" ? reject(err) : resolve()));
  });
}
