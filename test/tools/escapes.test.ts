import { readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolOutcome } from "../../src/agent/tool.js";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { workspaceTools } from "../../src/tools/index.js";
import { makeSandbox, runTool, shown } from "./helpers.js";

const tool = (name: string) => workspaceTools.find((t) => t.name === name)!;

/** A workspace with every kind of escape hatch planted in it, and a secret outside. */
async function trappedWorkspace() {
  const sandbox = await makeSandbox();
  const { workspace, outside } = sandbox;
  await writeFile(join(outside, "secret.txt"), "TOP-SECRET-OUTSIDE\n");
  await symlink("/etc", join(workspace, "etc-link"));
  await symlink("..", join(workspace, "parent-link"));
  await symlink("loop-b", join(workspace, "loop-a"));
  await symlink("loop-a", join(workspace, "loop-b"));
  await symlink(outside, join(workspace, "out-dir"));
  await symlink(join(outside, "not-yet.txt"), join(workspace, "dangling-out"));
  await symlink(join(outside, "secret.txt"), join(workspace, "secret-link"));
  return sandbox;
}

const ESCAPES = [
  "../..",
  "../outside/secret.txt",
  "/etc/passwd",
  "etc-link/passwd",
  "parent-link/outside/secret.txt",
  "secret-link",
  "loop-a",
  "out-dir/new.txt",
  "dangling-out",
];

/** The input each tool takes to touch `path`. */
const CALLS: Record<string, (path: string) => Record<string, unknown>> = {
  list_files: (path) => ({ path }),
  read_file: (path) => ({ path }),
  search_files: (path) => ({ pattern: "root|SECRET", path }),
  write_file: (path) => ({ path, content: "pwned" }),
  edit_file: (path) => ({ path, oldText: "root", newText: "pwned" }),
};

function expectRefused(outcome: ToolOutcome): void {
  expect(outcome.ok).toBe(false);
  if (!outcome.ok) expect([ToolErrorCode.pathOutsideWorkspace, ToolErrorCode.symlinkLoop]).toContain(outcome.errorCode);
  expect(shown(outcome)).not.toMatch(/root:|TOP-SECRET/);
}

describe("escape attempts", () => {
  for (const [name, call] of Object.entries(CALLS)) {
    it(`${name} refuses every path leading outside the workspace and shows no outside byte`, async () => {
      const { workspace, outside } = await trappedWorkspace();
      for (const path of ESCAPES) expectRefused(await runTool(tool(name), workspace, call(path)));
      expect((await readdir(outside)).sort()).toEqual(["secret.txt"]);
      expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("TOP-SECRET-OUTSIDE\n");
    });
  }

  it("list_files and search_files over the whole workspace neither follow nor read through symlinks", async () => {
    const { workspace } = await trappedWorkspace();
    for (const outcome of [
      await runTool(tool("list_files"), workspace, { depth: 10 }),
      await runTool(tool("search_files"), workspace, { pattern: "root|SECRET" }),
    ]) {
      expect(outcome.ok).toBe(true);
      expect(shown(outcome)).not.toMatch(/root:|TOP-SECRET/);
    }
  });
});
