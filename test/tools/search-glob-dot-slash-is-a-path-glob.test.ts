import { describe, expect, it } from "vitest";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

describe("search_files glob", () => {
  it('"./*.ts" (a glob with a "/") matches paths from the workspace root: only the root\'s .ts files', async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.ts": "hit\n", "src/b.ts": "hit\n", "src/deep/c.ts": "hit\n" });
    // The description: "Without '/' it matches file names ...; with '/' the path relative to the workspace root".
    const output = expectOk(await runTool(searchFilesTool, workspace, { pattern: "hit", glob: "./*.ts" }));
    expect(output.split("\n")).toEqual(["a.ts:1: hit"]);
  });
});
