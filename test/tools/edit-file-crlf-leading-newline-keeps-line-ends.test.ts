import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { expectOk, makeSandbox, runTool, writeTree } from "../tools/helpers.js";

describe("edit_file on a CRLF file, oldText starting with \\n", () => {
  it("keeps every line end CRLF (no \\r\\r\\n) when oldText starts with a line end", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": "function a() {\r\n  return 1;\r\n}\r\n" });
    // A model adding a line after the first one: oldText begins with the line end it follows.
    expectOk(
      await runTool(editFileTool, workspace, {
        path: "a.js",
        oldText: "\n  return 1;",
        newText: "\n  log();\n  return 1;",
      }),
    );
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe("function a() {\r\n  log();\r\n  return 1;\r\n}\r\n");
  });

  it("replaceAll of a bare \\n keeps the file's CRLF line ends", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "a\r\nb\r\n" });
    expectOk(
      await runTool(editFileTool, workspace, { path: "a.txt", oldText: "\n", newText: "\n\n", replaceAll: true }),
    );
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("a\r\n\r\nb\r\n\r\n");
  });
});
