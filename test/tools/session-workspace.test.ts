import { closeSync, constants, existsSync, mkdirSync, openSync, readdirSync, writeFileSync } from "node:fs";
import { mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { removeSharedWorkspace } from "../../src/tools/shared-workspace-removal.js";
import {
  createSessionWorkspace,
  InvalidWorkspaceNameError,
  isValidWorkspaceName,
  removeSessionWorkspace,
  SHARED_WORKSPACES_DIR,
} from "../../src/tools/workspace.js";
import { makeSandbox } from "./helpers.js";

describe("createSessionWorkspace", () => {
  it("creates <root>/<sessionId>, creating the root too", async () => {
    const { base } = await makeSandbox();
    const root = join(base, "workspaces");
    const ws = await createSessionWorkspace({ root, sessionId: "sess_123" });
    expect(ws).toEqual({ path: join(root, "sess_123"), shared: false });
    expect((await stat(ws.path)).isDirectory()).toBe(true);
  });

  it("puts a named shared workspace under <root>/_shared/<name>, reusing it when it exists", async () => {
    const { base } = await makeSandbox();
    const first = await createSessionWorkspace({ root: base, sessionId: "s1", shared: "team-repo" });
    expect(first).toEqual({ path: join(base, SHARED_WORKSPACES_DIR, "team-repo"), shared: true });
    await writeFile(join(first.path, "kept.txt"), "kept");
    const second = await createSessionWorkspace({ root: base, sessionId: "s2", shared: "team-repo" });
    expect(second.path).toBe(first.path);
    expect(await readFile(join(second.path, "kept.txt"), "utf8")).toBe("kept");
  });

  it.each(["..", ".", "a/b", "a\\b", "", ".hidden", "_shared", "x".repeat(129), "a\0b", "../etc"])(
    "refuses the shared name %j (not a single safe segment)",
    async (name) => {
      const { base } = await makeSandbox();
      expect(isValidWorkspaceName(name)).toBe(false);
      await expect(createSessionWorkspace({ root: base, sessionId: "s1", shared: name })).rejects.toBeInstanceOf(
        InvalidWorkspaceNameError,
      );
    },
  );

  it("refuses an unsafe session id", async () => {
    const { base } = await makeSandbox();
    await expect(createSessionWorkspace({ root: base, sessionId: "../x" })).rejects.toBeInstanceOf(
      InvalidWorkspaceNameError,
    );
  });

  it("refuses a session directory planted as a symlink pointing outside the root", async () => {
    const { base, outside } = await makeSandbox();
    const root = join(base, "root");
    await mkdir(root);
    await symlink(outside, join(root, "s1"));
    await expect(createSessionWorkspace({ root, sessionId: "s1" })).rejects.toThrow(/outside the workspace root/);
  });
});

describe("removeSessionWorkspace", () => {
  it("removes a session's own workspace with its contents", async () => {
    const { base } = await makeSandbox();
    const ws = await createSessionWorkspace({ root: base, sessionId: "s1" });
    await writeFile(join(ws.path, "f.txt"), "x");
    expect(await removeSessionWorkspace({ root: base, ...ws })).toBe(true);
    expect(existsSync(ws.path)).toBe(false);
  });

  it("never removes a shared workspace", async () => {
    const { base } = await makeSandbox();
    const ws = await createSessionWorkspace({ root: base, sessionId: "s1", shared: "common" });
    expect(await removeSessionWorkspace({ root: base, ...ws })).toBe(false);
    expect(existsSync(ws.path)).toBe(true);
  });

  it("removes symlinks inside the workspace without touching their outside targets", async () => {
    const { base, outside } = await makeSandbox();
    await writeFile(join(outside, "precious.txt"), "keep me");
    const ws = await createSessionWorkspace({ root: join(base, "root"), sessionId: "s1" });
    await symlink(outside, join(ws.path, "link"));
    await removeSessionWorkspace({ root: join(base, "root"), ...ws });
    expect(await readFile(join(outside, "precious.txt"), "utf8")).toBe("keep me");
  });

  it.each([
    ["a directory outside the root", (base: string) => join(base, "outside")],
    ["the root itself", (base: string) => join(base, "root")],
    ["a nested directory", (base: string) => join(base, "root", "s1", "sub")],
    ["the shared-workspaces directory", (base: string) => join(base, "root", SHARED_WORKSPACES_DIR)],
    ["a path escaping with ..", (base: string) => join(base, "root", "..", "outside")],
  ])("refuses to remove %s, deleting nothing", async (_, pathOf) => {
    const { base } = await makeSandbox();
    const root = join(base, "root");
    await createSessionWorkspace({ root, sessionId: "s1" });
    await mkdir(join(root, "s1", "sub"));
    await createSessionWorkspace({ root, sessionId: "s2", shared: "team" });
    const path = pathOf(base);
    const existedBefore = existsSync(path);
    await expect(removeSessionWorkspace({ root, path, shared: false })).rejects.toThrow(/refusing to remove/);
    expect(existsSync(path)).toBe(existedBefore);
    expect(existsSync(join(root, "s1", "sub"))).toBe(true);
  });

  it("returns false for a workspace that is already gone", async () => {
    const { base } = await makeSandbox();
    expect(await removeSessionWorkspace({ root: base, path: join(base, "s9"), shared: false })).toBe(false);
  });
});

describe("removeSharedWorkspace", () => {
  const sharedOf = async (base: string, name = "team") => {
    const ws = await createSessionWorkspace({ root: base, sessionId: "s1", shared: name });
    await writeFile(join(ws.path, "old.txt"), "old");
    return ws.path;
  };
  /** `inUse` answering `answers` in turn, running `meanwhile` (if any) before its second answer. */
  const answering = (answers: boolean[], meanwhile?: () => Promise<void>) => {
    let asked = 0;
    return async () => {
      asked++;
      if (asked === 2) await meanwhile?.();
      return answers[asked - 1] ?? false;
    };
  };

  it("removes it with its contents when no session has it, leaving nothing aside", async () => {
    const { base } = await makeSandbox();
    const path = await sharedOf(base);
    expect(await removeSharedWorkspace({ root: base, path, inUse: answering([false, false]) })).toBe(true);
    expect(readdirSync(join(base, SHARED_WORKSPACES_DIR))).toEqual([]);
  });

  it("removes one holding a tree deeper than PATH_MAX, leaving nothing aside", async () => {
    const { base } = await makeSandbox();
    const path = await sharedOf(base);
    // 30 levels of 200-character names, each made inside the one above through its descriptor.
    let fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
    for (let level = 0; level < 30; level++) {
      const name = `/proc/self/fd/${fd}/${String(level).padStart(200, "d")}`;
      mkdirSync(name);
      const next = openSync(name, constants.O_RDONLY | constants.O_DIRECTORY);
      closeSync(fd);
      fd = next;
    }
    writeFileSync(`/proc/self/fd/${fd}/secret.env`, "AWS_SECRET=x");
    closeSync(fd);
    expect(await removeSharedWorkspace({ root: base, path, inUse: answering([false, false]) })).toBe(true);
    expect(readdirSync(join(base, SHARED_WORKSPACES_DIR))).toEqual([]);
  });

  it("leaves it untouched while a session has it", async () => {
    const { base } = await makeSandbox();
    const path = await sharedOf(base);
    expect(await removeSharedWorkspace({ root: base, path, inUse: answering([true]) })).toBe(false);
    expect(await readFile(join(path, "old.txt"), "utf8")).toBe("old");
  });

  it("puts it back, contents and all, when a session has it by the second look", async () => {
    const { base } = await makeSandbox();
    const path = await sharedOf(base);
    expect(await removeSharedWorkspace({ root: base, path, inUse: answering([false, true]) })).toBe(false);
    expect(await readFile(join(path, "old.txt"), "utf8")).toBe("old");
    expect(readdirSync(join(base, SHARED_WORKSPACES_DIR))).toEqual(["team"]);
  });

  it("keeps a directory made anew and written to meanwhile, and deletes neither", async () => {
    const { base } = await makeSandbox();
    const path = await sharedOf(base);
    const madeAnew = async () => {
      await createSessionWorkspace({ root: base, sessionId: "s2", shared: "team" });
      await writeFile(join(path, "new.txt"), "new");
    };
    expect(await removeSharedWorkspace({ root: base, path, inUse: answering([false, true], madeAnew) })).toBe(false);
    expect(await readFile(join(path, "new.txt"), "utf8")).toBe("new");
    const aside = readdirSync(join(base, SHARED_WORKSPACES_DIR)).filter((name) => name !== "team");
    expect(aside).toEqual([expect.stringMatching(/^\.removing-team-/)]);
    expect(await readFile(join(base, SHARED_WORKSPACES_DIR, aside[0] as string, "old.txt"), "utf8")).toBe("old");
  });

  it("puts it back and throws when the second look fails", async () => {
    const { base } = await makeSandbox();
    const path = await sharedOf(base);
    let asked = 0;
    const inUse = async () => {
      if (++asked === 2) throw new Error("database unreachable");
      return false;
    };
    await expect(removeSharedWorkspace({ root: base, path, inUse })).rejects.toThrow("database unreachable");
    expect(await readFile(join(path, "old.txt"), "utf8")).toBe("old");
  });

  it.each([
    ["a session's own workspace", (base: string) => join(base, "s1")],
    ["the shared-workspaces directory", (base: string) => join(base, SHARED_WORKSPACES_DIR)],
    ["a path escaping with ..", (base: string) => join(base, SHARED_WORKSPACES_DIR, "..", "s1")],
  ])("refuses to remove %s, deleting nothing", async (_, pathOf) => {
    const { base } = await makeSandbox();
    await createSessionWorkspace({ root: base, sessionId: "s1" });
    await sharedOf(base);
    await expect(removeSharedWorkspace({ root: base, path: pathOf(base), inUse: async () => false })).rejects.toThrow(
      /refusing to remove/,
    );
    expect(existsSync(join(base, "s1"))).toBe(true);
    expect(existsSync(join(base, SHARED_WORKSPACES_DIR, "team", "old.txt"))).toBe(true);
  });
});
