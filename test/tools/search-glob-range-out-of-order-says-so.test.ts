/**
 * A glob whose character range is out of order (`[z-a]`) is refused INVALID_PATTERN, and the
 * message said "unclosed [ or {" of a glob whose brackets are all closed: the model looks for
 * a bracket it did not leave open. The message names both causes.
 */
import { expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { makeSandbox, runTool, writeTree } from "./helpers.js";

it("search_files refuses the glob [z-a] saying its range is out of order", async () => {
  const { workspace } = await makeSandbox();
  await writeTree(workspace, { "a.txt": "x\n" });
  const outcome = await runTool(searchFilesTool, workspace, { pattern: "x", glob: "[z-a]*" });
  expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.invalidPattern });
  expect(outcome.ok ? "" : outcome.message).toMatch(/range out of order/);
});
