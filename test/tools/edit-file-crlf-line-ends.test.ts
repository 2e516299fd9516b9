import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

const CRLF_SOURCE = "function a() {\r\n  return 1;\r\n}\r\n";

describe("edit_file on a file with CRLF line ends", () => {
  it("matches oldText the model wrote with LF line ends", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": CRLF_SOURCE });
    const outcome = await runTool(editFileTool, workspace, {
      path: "a.js",
      oldText: "function a() {\n  return 1;",
      newText: "function a() {\n  return 2;",
    });
    expectOk(outcome);
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe("function a() {\r\n  return 2;\r\n}\r\n");
  });

  it("keeps the file's CRLF line ends when newText adds lines with LF", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": CRLF_SOURCE });
    expectOk(
      await runTool(editFileTool, workspace, { path: "a.js", oldText: "return 1;", newText: "log();\nreturn 1;" }),
    );
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe("function a() {\r\n  log();\r\nreturn 1;\r\n}\r\n");
  });

  it("applies uniqueness and replaceAll to the CRLF form of oldText", async () => {
    const { workspace } = await makeSandbox();
    const source = "a\r\nb\r\na\r\nb\r\n";
    await writeTree(workspace, { "a.txt": source });
    const message = expectError(
      await runTool(editFileTool, workspace, { path: "a.txt", oldText: "a\nb", newText: "c\nd" }),
      ToolErrorCode.ambiguousMatch,
    );
    expect(message).toMatch(/occurs 2 times/);
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe(source);
    expectOk(
      await runTool(editFileTool, workspace, { path: "a.txt", oldText: "a\nb", newText: "c\nd", replaceAll: true }),
    );
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("c\r\nd\r\nc\r\nd\r\n");
  });

  it("says the file's line ends are CRLF when oldText matches neither as is nor with CRLF", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": CRLF_SOURCE });
    const message = expectError(
      await runTool(editFileTool, workspace, { path: "a.js", oldText: "function b() {\n", newText: "x" }),
      ToolErrorCode.noMatch,
    );
    expect(message).toMatch(/line ends are CRLF \(\\r\\n\); oldText was looked for with its \\n as \\r\\n/);
  });

  it("leaves a file of mixed line ends to exact matches, and says its line ends are mixed", async () => {
    const { workspace } = await makeSandbox();
    const source = "a\r\nb\nc\r\n";
    await writeTree(workspace, { "a.txt": source });
    const message = expectError(
      await runTool(editFileTool, workspace, { path: "a.txt", oldText: "a\nb", newText: "x\ny" }),
      ToolErrorCode.noMatch,
    );
    expect(message).toMatch(/line ends are mixed/);
    expectOk(await runTool(editFileTool, workspace, { path: "a.txt", oldText: "b\nc", newText: "x\ny" }));
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("a\r\nx\ny\r\n");
  });
});
