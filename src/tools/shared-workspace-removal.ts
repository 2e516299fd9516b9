import { randomBytes } from "node:crypto";
import { rename } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { errnoCode } from "../errno.js";
import { isValidWorkspaceName, SHARED_WORKSPACES_DIR } from "./session-workspace.js";
import { removeTree } from "./tree-removal.js";

/**
 * Where a shared workspace being removed is moved first: a name no shared workspace can have
 * (a valid name starts with a letter or digit), so no session is ever given it.
 */
const asideName = (name: string): string => `.removing-${name}-${randomBytes(6).toString("hex")}`;

/**
 * Removes the shared workspace at `path` (`<root>/_shared/<name>`) with everything in it, unless
 * `inUse` answers that a session has it; true when it was removed. Sound against a create of a
 * session naming it, on any instance, provided that create stores its session first and makes
 * (or reuses) the directory after (createSessionWorkspace, which makes it again when missing):
 * the directory is moved aside (atomically) before `inUse` is asked again, so a session stored
 * before that second answer is seen, and its directory is put back; one stored after it makes
 * its own directory anew, after the move. A directory made anew and already written to by the
 * time it would be put back is kept, the old one left aside (`.removing-*`, for the operator),
 * never deleted. A crash between the move and the removal leaves it aside too. Throws, deleting
 * nothing, when `path` is not a shared workspace directly under `<root>/_shared`.
 */
export async function removeSharedWorkspace({
  root,
  path,
  inUse,
}: {
  root: string;
  path: string;
  inUse: () => Promise<boolean>;
}): Promise<boolean> {
  const sharedDir = join(resolve(root), SHARED_WORKSPACES_DIR);
  const target = resolve(path);
  const name = basename(target);
  if (dirname(target) !== sharedDir || !isValidWorkspaceName(name)) {
    throw new Error(`refusing to remove ${path}: not a shared workspace directly under ${sharedDir}`);
  }
  // Another session has it: never moved from under its runs.
  if (await inUse()) return false;
  const asideAs = asideName(name);
  const aside = join(sharedDir, asideAs);
  try {
    await rename(target, aside);
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return false;
    throw err;
  }
  let used: boolean;
  try {
    used = await inUse();
  } catch (err) {
    await putBack(aside, target);
    throw err;
  }
  if (used) {
    await putBack(aside, target);
    return false;
  }
  // Whatever its depth and modes; a symlink inside is removed, never followed.
  await removeTree({ parent: sharedDir, name: asideAs });
  return true;
}

/** Moves the directory back; one made anew at `target` meanwhile is replaced only while empty. */
async function putBack(aside: string, target: string): Promise<void> {
  try {
    await rename(aside, target);
  } catch (err) {
    const code = errnoCode(err);
    if (code !== "ENOTEMPTY" && code !== "EEXIST") throw err;
  }
}
