import type { Dir, Dirent } from "node:fs";
import { closeSync, opendirSync, openSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";
import { errnoCode, isOutOfDescriptors } from "../errno.js";
import { closeDir, dirPath, entryPath, O_DIR, type OpenDir, openDirAt } from "./open-dir.js";
import { slicedSort } from "./sliced-sort.js";

/** Directory names never listed or searched: noise for the model, and often huge. */
export const HIDDEN_DIRECTORY_NAMES: ReadonlySet<string> = new Set([".git", "node_modules"]);

/** The walk lets the event loop turn once it has run this long since it last did. */
const WALK_SLICE_MS = 10;
/** Directory entries read from the system at a time. */
const LIST_PIECE = 256;

/** What an entry is, as its directory says (Dirent); "other" when the file system does not say. */
export type WalkEntryKind = "directory" | "file" | "symlink" | "fifo" | "socket" | "device" | "other";

export interface WalkEntry {
  /** Path relative to the workspace root, `/`-separated (sharing its directory's prefix in memory). */
  relative: string;
  /** Path components relative to the start directory. */
  segments: string[];
  name: string;
  kind: WalkEntryKind;
  /** 1 for the start directory's own entries. */
  depth: number;
}

/** Why a walk ended before covering its tree: its signal fired, or it would have read more than `maxListed` entries. */
export type WalkCut = "aborted" | "too_many_entries";

export interface Walk extends AsyncIterable<WalkEntry> {
  /** Null while the walk runs, and when it ended by covering the tree or by the caller's break. */
  readonly cut: WalkCut | null;
  /**
   * The directories it reported at `maxDepth` and did not enter (so far) that hold something
   * it would have reported (or that it could not look into): when above 0, the walk did not
   * cover what lies below them, whatever its `cut`. An empty one, or one holding only hidden
   * names (HIDDEN_DIRECTORY_NAMES), is not counted. Always 0 without `countTooDeep`.
   */
  readonly tooDeep: number;
}

export interface WalkOptions {
  start: OpenDir;
  /** Where `start` is in the workspace, "." for the root. */
  relative: string;
  /** Entries are reported down to this depth; a directory at it is not entered (see countTooDeep). */
  maxDepth: number;
  /**
   * Looks into each directory at `maxDepth` for a first entry, counting in `tooDeep` those that
   * hold one; a caller that says nothing of what lies deeper (list_files, whose depth is the
   * model's choice) leaves it off and does not pay for it.
   */
  countTooDeep?: boolean;
  /**
   * Once it fires, the walk ends before its next entry (cut "aborted"), within one piece
   * (LIST_PIECE entries) of a directory it is reading.
   */
  signal?: AbortSignal;
  /**
   * The directory entries the walk reads in all (hidden ones included), at most: the directory
   * that would pass it is not listed and the walk ends there (cut "too_many_entries"). It
   * bounds the memory the walk holds (each open directory's sorted entries).
   */
  maxListed?: number;
}

interface WalkState {
  cut: WalkCut | null;
  tooDeep: number;
}

interface Frame {
  dir: OpenDir;
  entries: Dirent[];
  next: number;
  /** The directory's path relative to the workspace root, with a trailing `/` ("" for the root). */
  prefix: string;
  segments: string[];
  depth: number;
}

function kindOf(entry: Dirent): WalkEntryKind {
  if (entry.isDirectory()) return "directory";
  if (entry.isFile()) return "file";
  if (entry.isSymbolicLink()) return "symlink";
  if (entry.isFIFO()) return "fifo";
  if (entry.isSocket()) return "socket";
  return entry.isBlockDevice() || entry.isCharacterDevice() ? "device" : "other";
}

const byName = (a: Dirent, b: Dirent): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Walks the open directory `start` depth-first, each directory's entries sorted by name (code
 * points), each directory followed by its contents. Every directory is listed through a
 * descriptor opened inside its parent's without following a link, so a directory swapped for
 * a symlink mid-walk is skipped, never entered. Symlinks are reported, never followed; `.git`
 * and `node_modules` are skipped entirely; directories at `maxDepth` are not entered (counted in
 * `tooDeep` when they hold an entry it would report, so that a caller can say what it left out);
 * unreadable directories are skipped, but a directory that cannot be opened or read for lack
 * of file descriptors (EMFILE, ENFILE) throws that error: skipping it would make the walk look
 * complete without its contents. The walk costs the same per entry at any depth, and lets the
 * event loop turn every WALK_SLICE_MS, however fast its consumer takes the entries. Stop early
 * by breaking out of the loop (the directories it opened are closed). `start` stays the
 * caller's to close.
 */
export function walk(options: WalkOptions): Walk {
  const state: WalkState = { cut: null, tooDeep: 0 };
  return {
    get cut() {
      return state.cut;
    },
    get tooDeep() {
      return state.tooDeep;
    },
    [Symbol.asyncIterator]: () => walkEntries(options, state),
  };
}

async function* walkEntries(
  { start, relative, maxDepth, countTooDeep = false, signal, maxListed = Number.POSITIVE_INFINITY }: WalkOptions,
  state: WalkState,
): AsyncGenerator<WalkEntry> {
  const stack: Frame[] = [];
  let listed = 0;
  let turned = performance.now();
  /** Lets the event loop turn when the walk has run WALK_SLICE_MS since it last did. */
  const maybeTurn = async (): Promise<void> => {
    if (performance.now() - turned <= WALK_SLICE_MS) return;
    await nextTurn();
    turned = performance.now();
  };
  /** Lists `dir` onto the stack; false (cut set) when its entries would pass maxListed, or the signal fired. */
  const enter = async (dir: OpenDir, prefix: string, segments: string[], depth: number): Promise<boolean> => {
    const entries = await listDir({ dir, room: maxListed - listed, maybeTurn, signal });
    if (!Array.isArray(entries)) {
      state.cut = entries;
      return false;
    }
    listed += entries.length;
    stack.push({ dir, entries: await slicedSort(entries, byName, WALK_SLICE_MS), next: 0, prefix, segments, depth });
    return true;
  };
  try {
    if (!(await enter(start, relative === "." ? "" : `${relative}/`, [], 1))) return;
    while (stack.length > 0) {
      if (signal?.aborted) {
        state.cut = "aborted";
        return;
      }
      if (performance.now() - turned > WALK_SLICE_MS) await maybeTurn();
      const frame = stack[stack.length - 1] as Frame;
      const entry = frame.entries[frame.next++];
      if (!entry) {
        stack.pop();
        if (frame.dir !== start) await closeDir(frame.dir);
        continue;
      }
      if (HIDDEN_DIRECTORY_NAMES.has(entry.name)) continue;
      const kind = kindOf(entry);
      const here = [...frame.segments, entry.name];
      const path = frame.prefix + entry.name;
      yield { relative: path, segments: here, name: entry.name, kind, depth: frame.depth };
      if (kind !== "directory") continue;
      if (frame.depth >= maxDepth) {
        if (countTooDeep && holdsAnEntry(frame.dir, entry.name)) state.tooDeep++;
        continue;
      }
      const sub = await openDirAt(frame.dir, entry.name).catch(skipUnlessOutOfDescriptors);
      if (!sub) continue;
      let entered = false;
      try {
        entered = await enter(sub, `${path}/`, here, frame.depth + 1);
      } finally {
        if (!entered) await closeDir(sub);
      }
      if (!entered) return;
    }
  } finally {
    for (const frame of stack) if (frame.dir !== start) await closeDir(frame.dir);
  }
}

interface ListDirOptions {
  dir: OpenDir;
  room: number;
  maybeTurn: () => Promise<void>;
  signal: AbortSignal | undefined;
}

/**
 * The entries of `dir`, read in pieces of LIST_PIECE so that no more than `room` + 1 are ever
 * read: "too_many_entries" when it has more than `room`, "aborted" when `signal` has fired at
 * the end of a piece. An unreadable directory has none, unless it lacks a file descriptor (that
 * error is thrown). Synchronous, as open-dir.ts's calls are: a local directory's entries take
 * microseconds, where each round trip through the thread pool costs the event loop more (a
 * listing of a small directory took ~160 µs so, ~50 µs in one call); `maybeTurn` between pieces
 * lets the loop turn while a huge directory is read.
 */
async function listDir({ dir, room, maybeTurn, signal }: ListDirOptions): Promise<Dirent[] | WalkCut> {
  const entries: Dirent[] = [];
  let handle: Dir;
  try {
    handle = opendirSync(dirPath(dir), { bufferSize: LIST_PIECE });
  } catch (err) {
    return skipUnlessOutOfDescriptors(err) ?? [];
  }
  try {
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      if (entries.length >= room) return "too_many_entries";
      entries.push(entry);
      if (entries.length % LIST_PIECE !== 0) continue;
      if (signal?.aborted) return "aborted";
      await maybeTurn();
    }
    return entries;
  } catch (err) {
    return skipUnlessOutOfDescriptors(err) ?? [];
  } finally {
    try {
      handle.closeSync();
    } catch {
      // Closed either way.
    }
  }
}

/**
 * Whether the directory `name` inside `dir` holds an entry the walk would report (one not in
 * HIDDEN_DIRECTORY_NAMES): it is opened without following a link and read only up to such an
 * entry (the third at most). True when it cannot be opened or read (nothing says it is
 * empty), so that a caller never takes it for covered.
 */
function holdsAnEntry(dir: OpenDir, name: string): boolean {
  let fd: number;
  try {
    fd = openSync(entryPath(dir, name), O_DIR);
  } catch {
    return true;
  }
  let handle: Dir | null = null;
  try {
    handle = opendirSync(dirPath({ fd, path: join(dir.path, name) }), { bufferSize: 4 });
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      if (!HIDDEN_DIRECTORY_NAMES.has(entry.name)) return true;
    }
    return false;
  } catch {
    return true;
  } finally {
    try {
      handle?.closeSync();
    } catch {
      // Closed either way.
    }
    try {
      closeSync(fd);
    } catch {
      // Closed either way.
    }
  }
}

/** A directory that cannot be opened is skipped (null), unless the process has no descriptor left for it. */
function skipUnlessOutOfDescriptors(err: unknown): null {
  if (isOutOfDescriptors(errnoCode(err))) throw err;
  return null;
}
