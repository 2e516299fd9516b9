import { existsSync } from "node:fs";
import { chmod, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { WRITE_MAX_BYTES, writeFileTool } from "../../src/tools/write-file.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

describe("write_file", () => {
  it("creates a file and its missing parent directories, reporting the bytes written", async () => {
    const { workspace } = await makeSandbox();
    const output = expectOk(await runTool(writeFileTool, workspace, { path: "a/b/c.txt", content: "héllo" }));
    expect(output).toBe('wrote 6 bytes to "a/b/c.txt" (created)');
    expect(await readFile(join(workspace, "a/b/c.txt"), "utf8")).toBe("héllo");
  });

  it("replaces an existing file's content, keeping its mode, and leaves no temp file", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "run.sh": "old content" });
    await chmod(join(workspace, "run.sh"), 0o755);
    const output = expectOk(await runTool(writeFileTool, workspace, { path: "run.sh", content: "new" }));
    expect(output).toMatch(/wrote 3 bytes .*replaced its previous 11 bytes/);
    expect(await readFile(join(workspace, "run.sh"), "utf8")).toBe("new");
    expect((await stat(join(workspace, "run.sh"))).mode & 0o777).toBe(0o755);
    expect(await readdir(workspace)).toEqual(["run.sh"]);
  });

  it("refuses a path that names a directory (a trailing slash, . or ..), creating nothing", async () => {
    const { workspace } = await makeSandbox();
    for (const path of ["newdir/", "sub/dir/", ".", "sub/.."]) {
      const outcome = await runTool(writeFileTool, workspace, { path, content: "x" });
      expect(outcome, path).toMatchObject({ ok: false, errorCode: ToolErrorCode.invalidPath });
    }
    expect(await readdir(workspace)).toEqual([]);
  });

  it("writes an empty file", async () => {
    const { workspace } = await makeSandbox();
    expectOk(await runTool(writeFileTool, workspace, { path: "empty", content: "" }));
    expect((await stat(join(workspace, "empty"))).size).toBe(0);
  });

  it(`refuses content over ${WRITE_MAX_BYTES} bytes with FILE_TOO_LARGE, creating nothing`, async () => {
    const { workspace } = await makeSandbox();
    const outcome = await runTool(writeFileTool, workspace, {
      path: "big.txt",
      content: "x".repeat(WRITE_MAX_BYTES + 1),
    });
    expectError(outcome, ToolErrorCode.fileTooLarge);
    expect(existsSync(join(workspace, "big.txt"))).toBe(false);
  });

  it("refuses to write over a directory (NOT_A_FILE) or below a file (NOT_A_DIRECTORY)", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "dir/x": "", "file.txt": "keep" });
    expectError(await runTool(writeFileTool, workspace, { path: "dir", content: "x" }), ToolErrorCode.notAFile);
    expectError(
      await runTool(writeFileTool, workspace, { path: "file.txt/child.txt", content: "x" }),
      ToolErrorCode.notADirectory,
    );
    expect(await readFile(join(workspace, "file.txt"), "utf8")).toBe("keep");
  });
});
