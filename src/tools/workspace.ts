import { readlinkSync } from "node:fs";
import { lstat, mkdir, readlink, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { type ToolOutcome, toolError } from "../agent/tool.js";
import { errnoCode, isOutOfDescriptors } from "../errno.js";
import { ToolErrorCode } from "./error-codes.js";
import { fsErrorOutcome, outOfDescriptorsOutcome } from "./fs-errors.js";
import { closeDir, entryPath, FD_DIR, type OpenDir, openDirAt, openDirFd, syncDir } from "./open-dir.js";
import { isInside } from "./paths.js";

export { isInside, workspaceRelative } from "./paths.js";

export {
  createSessionWorkspace,
  InvalidWorkspaceNameError,
  isValidWorkspaceName,
  removeSessionWorkspace,
  type SessionWorkspace,
  SHARED_WORKSPACES_DIR,
} from "./session-workspace.js";

/** Same bound as the kernel's: more symlinks than this in one resolution is treated as a loop. */
const MAX_SYMLINK_HOPS = 40;

/**
 * Opens the workspace directory (a session workspace's real path, as bound to its tools) if it
 * is still that directory: it exists and is not reached through a symlink. A command run by the
 * shell tool can replace the directory with a symlink to anywhere (another session's workspace
 * too); the tools then refuse to run instead of following it. Otherwise the error result the
 * tool returns: the workspace is not in place, or (retryable) the process has no descriptor
 * left to open it with.
 */
export async function openWorkspaceRoot(
  workspace: string,
): Promise<{ ok: true; root: OpenDir } | { ok: false; outcome: ToolOutcome }> {
  let root: OpenDir;
  try {
    root = { fd: await openDirFd(workspace), path: workspace };
  } catch (err) {
    const code = errnoCode(err);
    if (isOutOfDescriptors(code))
      return { ok: false, outcome: outOfDescriptorsOutcome(code, "open the workspace with") };
    return { ok: false, outcome: workspaceMovedOutcome() };
  }
  // O_NOFOLLOW covers the last component; what the kernel says it opened covers the others.
  const real = await (FD_DIR ? openedAs(`${FD_DIR}/${root.fd}`) : realpath(workspace).catch(() => null));
  if (real !== workspace) {
    await closeDir(root);
    return { ok: false, outcome: workspaceMovedOutcome() };
  }
  return { ok: true, root };
}

/** Where the descriptor named by `fdPath` (in FD_DIR) points, or null (read synchronously, as OpenDir is opened). */
function openedAs(fdPath: string): Promise<string | null> {
  try {
    return Promise.resolve(readlinkSync(fdPath));
  } catch {
    return Promise.resolve(null);
  }
}

const workspaceMovedOutcome = (): ToolOutcome =>
  toolError(
    ToolErrorCode.workspaceUnavailable,
    "the session's workspace directory is missing or was replaced (e.g. by a symlink); no tool runs in it",
    false,
  );

const outsideOutcome = (display: string): ToolOutcome =>
  toolError(
    ToolErrorCode.pathOutsideWorkspace,
    `"${display}" resolves outside the workspace; use a path inside it (relative paths are resolved from the workspace root)`,
    true,
  );

/**
 * The components of a path given by the model (relative to the workspace, or absolute), with
 * `.` and `..` applied lexically, or the refusal of a path that is malformed or lies outside.
 */
export function workspaceComponents(
  workspace: string,
  path: string,
): { ok: true; components: string[] } | { ok: false; outcome: ToolOutcome } {
  if (path.includes("\0")) {
    return { ok: false, outcome: toolError(ToolErrorCode.invalidPath, "the path contains a NUL byte", true) };
  }
  const lexical = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  if (!isInside(workspace, lexical)) return { ok: false, outcome: outsideOutcome(path === "" ? "." : path) };
  return { ok: true, components: relative(workspace, lexical).split(sep).filter(Boolean) };
}

export type EntryKind = "file" | "directory" | "other" | "missing";

/** An entry of the workspace, reached through open directories only. */
export interface Located {
  /** The workspace directory, held open. */
  root: OpenDir;
  /** The open directory that holds `name`; the root itself when the path is the workspace. */
  dir: OpenDir;
  /** The entry's name in `dir` (never a symlink when located); null for the workspace itself. */
  name: string | null;
  /** The entry's real path relative to the workspace, `/`-separated; "." for the workspace. */
  relative: string;
  kind: EntryKind;
  /** Closes the directories held open. */
  close(): Promise<void>;
}

export type LocateResult = { ok: true; at: Located } | { ok: false; outcome: ToolOutcome };

class Refusal extends Error {
  constructor(readonly outcome: ToolOutcome) {
    super(outcome.ok ? "" : outcome.message);
  }
}

const kindOf = (info: { isFile(): boolean; isDirectory(): boolean }): EntryKind =>
  info.isFile() ? "file" : info.isDirectory() ? "directory" : "other";

/**
 * Locates a path given by the model inside the workspace, component by component from the
 * workspace's open directory: each directory is opened (without following a link) inside the
 * one before, so a directory swapped for a symlink between two steps is never followed. A
 * symlink met on the way is followed only as a path inside the workspace (its target applied
 * to the real path reached so far, lexically); one that leaves is refused with
 * PATH_OUTSIDE_WORKSPACE, without naming where it led. A missing last component is located
 * as `missing`; a missing directory before it is NOT_FOUND, or created with `createParents`.
 * The caller works through `dir` and `name`, never a path string, and calls `close()`.
 */
export async function locateInWorkspace({
  workspace,
  path,
  createParents = false,
}: {
  workspace: string;
  path: string;
  createParents?: boolean;
}): Promise<LocateResult> {
  const parsed = workspaceComponents(workspace, path);
  if (!parsed.ok) return parsed;
  const opened = await openWorkspaceRoot(workspace);
  if (!opened.ok) return opened;
  const root = opened.root;
  const display = path === "" ? "." : path;
  let dir = root;
  const leave = async () => {
    if (dir !== root) await closeDir(dir);
  };
  const done = (name: string | null, names: string[], kind: EntryKind): LocateResult => {
    const at = dir;
    const close = async () => {
      if (at !== root) await closeDir(at);
      await closeDir(root);
    };
    const relative = [...names, ...(name === null ? [] : [name])].join("/") || ".";
    return { ok: true, at: { root, dir: at, name, relative, kind, close } };
  };
  try {
    const pending = [...parsed.components];
    let names: string[] = [];
    let hops = 0;
    const hop = () => {
      if (++hops > MAX_SYMLINK_HOPS) throw Object.assign(new Error("symlink loop"), { code: "ELOOP" });
    };
    for (let name = pending.shift(); name !== undefined; name = pending.shift()) {
      const last = pending.length === 0;
      const info = await lstat(entryPath(dir, name)).catch((err: unknown) => {
        if (errnoCode(err) === "ENOENT") return null;
        throw err;
      });
      if (info === null) {
        if (last) return done(name, names, "missing");
        if (!createParents) throw Object.assign(new Error("missing"), { code: "ENOENT" });
        // The new directory is an entry of `dir`: flushed with it, as the file's own entry is
        // (see writeFileAtomic), so that a power loss cannot take it and what goes in it away.
        await mkdir(entryPath(dir, name)).then(
          () => syncDir(dir),
          (err: unknown) => {
            if (errnoCode(err) !== "EEXIST") throw err;
            hop(); // made by someone else meanwhile (or a link now): look again
          },
        );
        pending.unshift(name);
        continue;
      }
      if (info.isSymbolicLink()) {
        hop();
        const target = resolve(join(workspace, ...names), await readlink(entryPath(dir, name)));
        if (!isInside(workspace, target)) throw new Refusal(outsideOutcome(display));
        pending.unshift(...relative(workspace, target).split(sep).filter(Boolean));
        await leave();
        dir = root;
        names = [];
        continue;
      }
      if (last) return done(name, names, kindOf(info));
      if (!info.isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" });
      let next: OpenDir;
      try {
        next = await openDirAt(dir, name);
      } catch (err) {
        // Replaced since the lstat (by a link, a file, or nothing): look again.
        if (errnoCode(err) !== "ENOTDIR" && errnoCode(err) !== "ENOENT") throw err;
        hop();
        pending.unshift(name);
        continue;
      }
      await leave();
      dir = next;
      names.push(name);
    }
    return done(null, names, "directory");
  } catch (err) {
    await leave();
    await closeDir(root);
    return { ok: false, outcome: err instanceof Refusal ? err.outcome : fsErrorOutcome(err, display) };
  }
}
