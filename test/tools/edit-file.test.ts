import { chmod, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EDIT_MAX_FILE_BYTES, editFileTool } from "../../src/tools/edit-file.js";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

const SOURCE = "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 1;\n}\n";

describe("edit_file", () => {
  it("replaces the single exact occurrence and reports its line", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": SOURCE });
    const output = expectOk(
      await runTool(editFileTool, workspace, {
        path: "a.js",
        oldText: "function b() {\n  return 1;",
        newText: "function b() {\n  return 2;",
      }),
    );
    expect(output).toMatch(/replaced 1 occurrence in "a.js" \(at line 5\)/);
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe(
      "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n",
    );
  });

  it("fails with AMBIGUOUS_MATCH and the count when oldText occurs several times, changing nothing", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": SOURCE });
    const before = await stat(join(workspace, "a.js"));
    const message = expectError(
      await runTool(editFileTool, workspace, { path: "a.js", oldText: "return 1;", newText: "return 3;" }),
      ToolErrorCode.ambiguousMatch,
    );
    expect(message).toMatch(/occurs 2 times/);
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe(SOURCE);
    expect((await stat(join(workspace, "a.js"))).ino).toBe(before.ino);
  });

  it("fails with NO_MATCH (0 matches) when oldText is absent, changing nothing", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": SOURCE });
    const before = await stat(join(workspace, "a.js"));
    const message = expectError(
      await runTool(editFileTool, workspace, { path: "a.js", oldText: "return  1;", newText: "x" }),
      ToolErrorCode.noMatch,
    );
    expect(message).toMatch(/0 matches/);
    const after = await stat(join(workspace, "a.js"));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it("replaces every occurrence with replaceAll and says how many", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": SOURCE });
    const output = expectOk(
      await runTool(editFileTool, workspace, {
        path: "a.js",
        oldText: "return 1;",
        newText: "return 0;",
        replaceAll: true,
      }),
    );
    expect(output).toMatch(/replaced 2 occurrences .*first at line 2/);
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe(SOURCE.replaceAll("return 1;", "return 0;"));
  });

  it("inserts newText literally, $ patterns included", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "price: X" });
    expectOk(await runTool(editFileTool, workspace, { path: "a.txt", oldText: "X", newText: "$& $1 $$" }));
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("price: $& $1 $$");
  });

  it("writes atomically: a new inode renamed into place, the mode kept, no temp file left", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "run.sh": "echo one\n" });
    await chmod(join(workspace, "run.sh"), 0o750);
    const before = await stat(join(workspace, "run.sh"));
    expectOk(await runTool(editFileTool, workspace, { path: "run.sh", oldText: "one", newText: "two" }));
    const after = await stat(join(workspace, "run.sh"));
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o750);
    expect(await readdir(workspace)).toEqual(["run.sh"]);
    expect(await readFile(join(workspace, "run.sh"), "utf8")).toBe("echo two\n");
  });

  it("refuses binary and non-UTF-8 files with BINARY_FILE", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, {
      "bin.dat": Buffer.from([0x41, 0x00, 0x42]),
      "latin1.txt": Buffer.from([0x63, 0x61, 0x66, 0xe9]),
    });
    expectError(
      await runTool(editFileTool, workspace, { path: "bin.dat", oldText: "A", newText: "C" }),
      ToolErrorCode.binaryFile,
    );
    expectError(
      await runTool(editFileTool, workspace, { path: "latin1.txt", oldText: "caf", newText: "tea" }),
      ToolErrorCode.binaryFile,
    );
    expect(await readFile(join(workspace, "latin1.txt"))).toEqual(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
  });

  it("refuses a missing file (NOT_FOUND), a directory (NOT_A_FILE) and a file over the size cap", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "dir/x": "" });
    await writeFile(join(workspace, "big.txt"), Buffer.alloc(EDIT_MAX_FILE_BYTES + 1, "a"));
    expectError(
      await runTool(editFileTool, workspace, { path: "nope.txt", oldText: "a", newText: "b" }),
      ToolErrorCode.notFound,
    );
    expectError(
      await runTool(editFileTool, workspace, { path: "dir", oldText: "a", newText: "b" }),
      ToolErrorCode.notAFile,
    );
    expectError(
      await runTool(editFileTool, workspace, { path: "big.txt", oldText: "a", newText: "b" }),
      ToolErrorCode.fileTooLarge,
    );
  });

  it("leaves the file untouched when newText equals oldText", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "same" });
    const before = await stat(join(workspace, "a.txt"));
    expect(
      expectOk(await runTool(editFileTool, workspace, { path: "a.txt", oldText: "same", newText: "same" })),
    ).toMatch(/^no change/);
    expect((await stat(join(workspace, "a.txt"))).ino).toBe(before.ino);
  });

  it("rejects an empty oldText at the schema", () => {
    expect(editFileTool.inputSchema.safeParse({ path: "a", oldText: "", newText: "x" }).success).toBe(false);
  });
});
