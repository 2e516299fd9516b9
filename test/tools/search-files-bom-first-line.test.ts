import { describe, expect, it } from "vitest";
import { readFileTool } from "../../src/tools/read-file.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

describe("search_files on a file starting with a UTF-8 byte-order mark", () => {
  it("matches a ^-anchored pattern on the first line (the BOM is not part of the line's text)", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "main.go": "\ufeffpackage main\n\nfunc main() {}\n" });
    const output = expectOk(await runTool(searchFilesTool, workspace, { pattern: "^package \\w+$" }));
    expect(output).toBe("main.go:1: package main");
  });

  it("numbers lines as read_file does (which shows the file as it is, the mark included)", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "main.go": "\ufeffpackage main\n\nfunc main() {}\n" });
    expect(expectOk(await runTool(searchFilesTool, workspace, { pattern: "^func main" }))).toBe(
      "main.go:3: func main() {}",
    );
    expect(expectOk(await runTool(readFileTool, workspace, { path: "main.go" })).split("\n")).toEqual([
      "     1\t\ufeffpackage main",
      "     2\t",
      "     3\tfunc main() {}",
    ]);
  });
});
