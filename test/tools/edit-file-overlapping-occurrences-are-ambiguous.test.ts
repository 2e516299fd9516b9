import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

describe("edit_file uniqueness", () => {
  it("refuses oldText that occurs twice overlapping (AMBIGUOUS_MATCH), changing nothing", async () => {
    const { workspace } = await makeSandbox();
    const source = "x = 1;\nx = 1;\nx = 1;\n";
    await writeTree(workspace, { "a.js": source });
    // "x = 1;\nx = 1;" occurs at line 1 and at line 2: replacing one or the other gives different files.
    const message = expectError(
      await runTool(editFileTool, workspace, { path: "a.js", oldText: "x = 1;\nx = 1;", newText: "y = 2;" }),
      ToolErrorCode.ambiguousMatch,
    );
    expect(message).toMatch(/occurs 2 times/);
    expect(message).toMatch(/overlapping \(starting at line 1 and at line 2\)/);
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe(source);
  });

  it("with replaceAll replaces the occurrences that do not overlap, from the start", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": "x = 1;\nx = 1;\nx = 1;\n" });
    const output = expectOk(
      await runTool(editFileTool, workspace, {
        path: "a.js",
        oldText: "x = 1;\nx = 1;",
        newText: "y = 2;",
        replaceAll: true,
      }),
    );
    expect(output).toMatch(/replaced 1 occurrence/);
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe("y = 2;\nx = 1;\n");
  });
});
