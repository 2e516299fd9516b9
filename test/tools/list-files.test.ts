import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { LIST_MAX_ENTRIES, listFilesTool } from "../../src/tools/list-files.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

describe("list_files", () => {
  it("lists depth-first, sorted, directories marked with a trailing slash, to depth 2 by default", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, {
      "b.txt": "",
      "a/z.txt": "",
      "a/inner/deep.txt": "",
      "c/x.txt": "",
    });
    const outcome = await runTool(listFilesTool, workspace, {});
    expect(expectOk(outcome).split("\n")).toEqual(["a/", "a/inner/", "a/z.txt", "b.txt", "c/", "c/x.txt"]);
    expect(outcome).toMatchObject({ truncated: false });
  });

  it("shows a name with a newline as one JSON-quoted line, not two", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "two\nlines.txt": "x", "plain.txt": "y", '"quoted"': "z" });
    const lines = expectOk(await runTool(listFilesTool, workspace, {})).split("\n");
    expect(lines).toEqual(['"\\"quoted\\""', "plain.txt", '"two\\nlines.txt"']);
  });

  it("stops with LIST_ABORTED when the run is cancelled, instead of walking on", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a/b.txt": "", "c.txt": "" });
    const cancelled = new AbortController();
    cancelled.abort();
    expectError(await runTool(listFilesTool, workspace, {}, cancelled.signal), ToolErrorCode.listAborted);
  });

  it("descends as deep as asked, and only one level with depth 1", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a/b/c/d.txt": "" });
    expect(expectOk(await runTool(listFilesTool, workspace, { depth: 1 }))).toBe("a/");
    expect(expectOk(await runTool(listFilesTool, workspace, { depth: 4 })).split("\n")).toEqual([
      "a/",
      "a/b/",
      "a/b/c/",
      "a/b/c/d.txt",
    ]);
  });

  it("shows paths relative to the workspace root when listing a subdirectory", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "src/lib/a.ts": "", "src/b.ts": "" });
    expect(expectOk(await runTool(listFilesTool, workspace, { path: "src" })).split("\n")).toEqual([
      "src/b.ts",
      "src/lib/",
      "src/lib/a.ts",
    ]);
  });

  it("hides .git and node_modules but shows other dot files", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, {
      ".git/HEAD": "ref",
      "node_modules/x/index.js": "",
      "pkg/node_modules/y.js": "",
      ".env.example": "",
      "index.js": "",
    });
    const lines = expectOk(await runTool(listFilesTool, workspace, { depth: 3 })).split("\n");
    expect(lines).toEqual([".env.example", "index.js", "pkg/"]);
  });

  it("marks symlinks with @ and does not follow them", async () => {
    const { workspace, outside } = await makeSandbox();
    await writeTree(outside, { "secret.txt": "x" });
    await symlink(outside, join(workspace, "out"));
    const output = expectOk(await runTool(listFilesTool, workspace, { depth: 5 }));
    expect(output).toBe("out@");
  });

  it(`caps the listing at ${LIST_MAX_ENTRIES} entries with a truncation note`, async () => {
    const { workspace } = await makeSandbox();
    const files: Record<string, string> = {};
    for (let i = 0; i < LIST_MAX_ENTRIES + 50; i++) files[`f${String(i).padStart(4, "0")}.txt`] = "";
    await writeTree(workspace, files);
    const outcome = await runTool(listFilesTool, workspace, {});
    const lines = expectOk(outcome).split("\n");
    expect(lines).toHaveLength(LIST_MAX_ENTRIES + 1);
    expect(lines.at(-1)).toMatch(/^\[truncated: showing the first 500 entries/);
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("says so for an empty directory", async () => {
    const { workspace } = await makeSandbox();
    await mkdir(join(workspace, "empty"));
    expect(expectOk(await runTool(listFilesTool, workspace, { path: "empty" }))).toBe(
      '(no files or directories in "empty")',
    );
  });

  it("refuses a file (NOT_A_DIRECTORY), a missing path (NOT_FOUND) and a path outside", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "f.txt": "" });
    expectError(await runTool(listFilesTool, workspace, { path: "f.txt" }), ToolErrorCode.notADirectory);
    expectError(await runTool(listFilesTool, workspace, { path: "nope" }), ToolErrorCode.notFound);
    expectError(await runTool(listFilesTool, workspace, { path: ".." }), ToolErrorCode.pathOutsideWorkspace);
  });

  it("rejects a depth outside 1..10 at the schema", () => {
    expect(listFilesTool.inputSchema.safeParse({ depth: 0 }).success).toBe(false);
    expect(listFilesTool.inputSchema.safeParse({ depth: 11 }).success).toBe(false);
    expect(listFilesTool.inputSchema.safeParse({ depth: 1.5 }).success).toBe(false);
    expect(listFilesTool.inputSchema.safeParse({ depth: 10 }).success).toBe(true);
  });
});
