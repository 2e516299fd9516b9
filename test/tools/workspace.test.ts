import { existsSync } from "node:fs";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { locateInWorkspace } from "../../src/tools/workspace.js";
import { makeSandbox, writeTree } from "./helpers.js";

/** Where a path leads (its real path relative to the workspace, and what it is), or its refusal. */
async function resolveInWorkspace(workspace: string, path: string) {
  const result = await locateInWorkspace({ workspace, path });
  if (!result.ok) return result;
  await result.at.close();
  return { ok: true as const, relative: result.at.relative, kind: result.at.kind };
}

async function refusal(workspace: string, path: string) {
  const result = await resolveInWorkspace(workspace, path);
  if (result.ok) throw new Error(`expected "${path}" to be refused, it resolved to ${result.relative}`);
  return result.outcome;
}

describe("locateInWorkspace", () => {
  it("resolves relative paths, '.' and inner '..' to real paths inside the workspace", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "src/a.ts": "a" });
    expect(await resolveInWorkspace(workspace, "src/a.ts")).toEqual({ ok: true, relative: "src/a.ts", kind: "file" });
    expect(await resolveInWorkspace(workspace, ".")).toEqual({ ok: true, relative: ".", kind: "directory" });
    expect(await resolveInWorkspace(workspace, "")).toMatchObject({ ok: true, relative: "." });
    expect(await resolveInWorkspace(workspace, "src")).toMatchObject({ ok: true, relative: "src", kind: "directory" });
    expect(await resolveInWorkspace(workspace, "src/../src/./a.ts")).toMatchObject({ relative: "src/a.ts" });
  });

  it("accepts an absolute path that lies inside the workspace", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "a" });
    expect(await resolveInWorkspace(workspace, join(workspace, "a.txt"))).toMatchObject({
      ok: true,
      relative: "a.txt",
    });
  });

  it("resolves a path that does not exist yet through its nearest existing parent", async () => {
    const { workspace } = await makeSandbox();
    // Only the last component may be missing; a missing directory before it is NOT_FOUND.
    expect(await resolveInWorkspace(workspace, "new.txt")).toEqual({ ok: true, relative: "new.txt", kind: "missing" });
    expect(await refusal(workspace, "new/dir/file.txt")).toMatchObject({ errorCode: ToolErrorCode.notFound });
  });

  it("creates missing directories with createParents, and only inside the workspace", async () => {
    const { workspace, outside } = await makeSandbox();
    await symlink(outside, join(workspace, "out"));
    const created = await locateInWorkspace({ workspace, path: "new/dir/file.txt", createParents: true });
    expect(created).toMatchObject({ ok: true, at: { relative: "new/dir/file.txt", kind: "missing" } });
    if (created.ok) await created.at.close();
    expect(existsSync(join(workspace, "new/dir"))).toBe(true);
    const refused = await locateInWorkspace({ workspace, path: "out/made/file.txt", createParents: true });
    expect(refused).toMatchObject({ ok: false, outcome: { errorCode: ToolErrorCode.pathOutsideWorkspace } });
    expect(await readdir(outside)).toEqual([]);
  });

  it("follows a symlink that stays inside the workspace to its real target", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "real/a.txt": "a" });
    await symlink(join(workspace, "real"), join(workspace, "alias"));
    expect(await resolveInWorkspace(workspace, "alias/a.txt")).toMatchObject({ ok: true, relative: "real/a.txt" });
    expect(await resolveInWorkspace(workspace, "alias")).toMatchObject({
      ok: true,
      relative: "real",
      kind: "directory",
    });
  });

  it("takes the workspace only by its real path: one reached through a symlink is refused, not followed", async () => {
    const { base, workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "a" });
    await symlink(workspace, join(base, "ws-link"));
    expect(await resolveInWorkspace(workspace, "a.txt")).toMatchObject({ ok: true, relative: "a.txt" });
    expect(await resolveInWorkspace(join(base, "ws-link"), "a.txt")).toMatchObject({
      ok: false,
      outcome: { errorCode: "WORKSPACE_UNAVAILABLE" },
    });
  });

  it.each([
    ["a parent escape", "../.."],
    ["a sibling through ..", "../outside/x.txt"],
    ["an absolute path outside", "/etc/passwd"],
    ["a deep .. chain", "a/b/../../../../etc/passwd"],
  ])("refuses %s with PATH_OUTSIDE_WORKSPACE", async (_, path) => {
    const { workspace } = await makeSandbox();
    const outcome = await refusal(workspace, path);
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.pathOutsideWorkspace, retryable: true });
  });

  it("refuses a symlink to /etc, and files through it", async () => {
    const { workspace } = await makeSandbox();
    await symlink("/etc", join(workspace, "etc-link"));
    expect((await refusal(workspace, "etc-link")).ok).toBe(false);
    const outcome = await refusal(workspace, "etc-link/passwd");
    expect(outcome).toMatchObject({ errorCode: ToolErrorCode.pathOutsideWorkspace });
    // The refusal does not reveal where the link led.
    expect(outcome.ok ? "" : outcome.message).not.toContain("/etc");
  });

  it("refuses a symlink to the workspace's parent directory", async () => {
    const { workspace } = await makeSandbox();
    await symlink("..", join(workspace, "up"));
    expect(await refusal(workspace, "up/outside")).toMatchObject({ errorCode: ToolErrorCode.pathOutsideWorkspace });
  });

  it("reports a symlink loop as SYMLINK_LOOP", async () => {
    const { workspace } = await makeSandbox();
    await symlink("loop-b", join(workspace, "loop-a"));
    await symlink("loop-a", join(workspace, "loop-b"));
    expect(await refusal(workspace, "loop-a")).toMatchObject({ errorCode: ToolErrorCode.symlinkLoop });
    expect(await refusal(workspace, "loop-a/new.txt")).toMatchObject({ errorCode: ToolErrorCode.symlinkLoop });
  });

  it("refuses a new file under a symlinked directory that points outside", async () => {
    const { workspace, outside } = await makeSandbox();
    await symlink(outside, join(workspace, "out"));
    expect(await refusal(workspace, "out/new/file.txt")).toMatchObject({
      errorCode: ToolErrorCode.pathOutsideWorkspace,
    });
  });

  it("refuses a dangling symlink whose (missing) target is outside", async () => {
    const { workspace, outside } = await makeSandbox();
    await symlink(join(outside, "not-yet.txt"), join(workspace, "dangling"));
    await symlink(join(outside, "missing-dir"), join(workspace, "dangling-dir"));
    expect(await refusal(workspace, "dangling")).toMatchObject({ errorCode: ToolErrorCode.pathOutsideWorkspace });
    expect(await refusal(workspace, "dangling-dir/x.txt")).toMatchObject({
      errorCode: ToolErrorCode.pathOutsideWorkspace,
    });
  });

  it("follows a dangling symlink whose target is inside to where the file would be created", async () => {
    const { workspace } = await makeSandbox();
    await symlink("later.txt", join(workspace, "alias.txt"));
    expect(await resolveInWorkspace(workspace, "alias.txt")).toEqual({
      ok: true,
      relative: "later.txt",
      kind: "missing",
    });
  });

  it("refuses a path with a NUL byte (INVALID_PATH), a file used as a directory (NOT_A_DIRECTORY)", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "file.txt": "x" });
    expect(await refusal(workspace, "a\0b")).toMatchObject({ errorCode: ToolErrorCode.invalidPath });
    expect(await refusal(workspace, "file.txt/child")).toMatchObject({ errorCode: ToolErrorCode.notADirectory });
  });

  it("reports a missing workspace directory as WORKSPACE_UNAVAILABLE", async () => {
    const { base } = await makeSandbox();
    expect(await refusal(join(base, "gone"), "a.txt")).toMatchObject({
      errorCode: ToolErrorCode.workspaceUnavailable,
    });
  });

  it("creates and changes nothing while resolving", async () => {
    const { workspace, outside } = await makeSandbox();
    await mkdir(join(workspace, "d"));
    await writeFile(join(workspace, "d/f"), "x");
    await symlink(outside, join(workspace, "out"));
    await resolveInWorkspace(workspace, "new/dir/file.txt");
    await resolveInWorkspace(workspace, "out/new/file.txt");
    expect((await readdir(workspace)).sort()).toEqual(["d", "out"]);
    expect(await readdir(outside)).toEqual([]);
    expect(existsSync(join(workspace, "new"))).toBe(false);
  });
});
