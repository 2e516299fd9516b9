import { lstatSync, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { type ToolOutcome, toolError } from "../agent/tool.js";
import { errnoCode } from "../errno.js";
import { ToolErrorCode } from "./error-codes.js";
import { notAFileOutcome, specialFileKind } from "./fs-errors.js";
import { closeDir, entryPath, O_FILE, type OpenDir, openDirAt } from "./open-dir.js";
import type { Located } from "./workspace.js";

/** The result when an entry changed (e.g. became a symlink) between being located and opened. */
export const changedOutcome = (display: string): ToolOutcome =>
  toolError(ToolErrorCode.ioError, `"${display}" changed while it was being opened; try again`, true);

/**
 * Opens the located directory: the workspace root itself, or the entry inside its directory
 * without following a link. Its `close` leaves the root open (closed with the location).
 */
export async function openLocatedDir(
  at: Located,
  display: string,
): Promise<{ ok: true; dir: OpenDir; close(): Promise<void> } | { ok: false; outcome: ToolOutcome }> {
  if (at.name === null) return { ok: true, dir: at.root, close: async () => {} };
  if (at.kind === "missing")
    return { ok: false, outcome: toolError(ToolErrorCode.notFound, `"${display}" does not exist`, true) };
  if (at.kind !== "directory") {
    return {
      ok: false,
      outcome: toolError(ToolErrorCode.notADirectory, `"${display}" is a file, not a directory; use read_file`, true),
    };
  }
  try {
    const dir = await openDirAt(at.dir, at.name);
    return { ok: true, dir, close: () => closeDir(dir) };
  } catch (err) {
    if (errnoCode(err) === "ENOTDIR" || errnoCode(err) === "ENOENT")
      return { ok: false, outcome: changedOutcome(display) };
    throw err;
  }
}

/**
 * Opens the located regular file for reading, without following a link and without blocking
 * on a FIFO; checks what was opened (not the name) is a regular file.
 */
export async function openLocatedFile(
  at: Located,
  display: string,
): Promise<{ ok: true; file: FileHandle; info: Stats } | { ok: false; outcome: ToolOutcome }> {
  if (at.name === null || at.kind === "directory") return { ok: false, outcome: notAFileOutcome(display, true) };
  if (at.kind === "missing")
    return { ok: false, outcome: toolError(ToolErrorCode.notFound, `"${display}" does not exist`, true) };
  if (at.kind !== "file")
    return { ok: false, outcome: notAFileOutcome(display, false, specialKindAt(at.dir, at.name)) };
  let file: FileHandle;
  try {
    file = await open(entryPath(at.dir, at.name), O_FILE);
  } catch (err) {
    if (errnoCode(err) === "ELOOP" || errnoCode(err) === "ENOENT")
      return { ok: false, outcome: changedOutcome(display) };
    throw err;
  }
  const info = await file.stat();
  if (!info.isFile()) {
    await file.close();
    return { ok: false, outcome: notAFileOutcome(display, info.isDirectory(), specialFileKind(info)) };
  }
  return { ok: true, file, info };
}

/** What the entry `name` of `dir` is when it is a special file (see specialFileKind), looked at without following a link; null otherwise or when it cannot be looked at. */
function specialKindAt(dir: OpenDir, name: string): string | null {
  try {
    return specialFileKind(lstatSync(entryPath(dir, name)));
  } catch {
    return null;
  }
}
