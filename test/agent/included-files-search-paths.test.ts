import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { includedFiles } from "../../src/agent/included-files.js";
import type { AgentMessage } from "../../src/agent/messages.js";
import type { ToolOutcome } from "../../src/agent/tool.js";
import { toolResultMessage } from "../../src/agent/tool-results.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { expectOk, makeSandbox, runTool } from "../tools/helpers.js";

/**
 * A step trace's includedFiles named search_files' files by parsing its result lines
 * (`<path>:<line>: <text>`): a file named `secrets.env:1: x.txt` was listed as `secrets.env` (a
 * file never sent: a crafted name forged the audit record), and a path shown as a JSON string
 * (a control character, a leading `"`) was listed quoted. The names now come from the tool's
 * structured result (its outcome's `files`, kept in the result's metadata), never from its text.
 */

/** The window of one request: a search_files call and its result, as the loop records it. */
function window(outcome: ToolOutcome): AgentMessage[] {
  return [
    { id: "u", role: "user", content: "find the needle" },
    {
      id: "a",
      role: "assistant",
      content: "",
      toolCalls: [{ id: "c1", name: "search_files", input: '{"pattern":"needle"}' }],
    },
    toolResultMessage({ id: "t", toolCallId: "c1", outcome }),
  ];
}

describe("includedFiles names the workspace files whose content search_files sent", () => {
  it("a file whose name holds ':<digits>: ' is listed under its own name, not a forged prefix of it", async () => {
    const { workspace } = await makeSandbox();
    // A legal file name; its search line is `secrets.env:1: x.txt:1: needle`.
    const name = "secrets.env:1: x.txt";
    await writeFile(join(workspace, name), "needle\n");
    const outcome = await runTool(searchFilesTool, workspace, { pattern: "needle" });
    expect(expectOk(outcome)).toBe(`${name}:1: needle`);
    expect(includedFiles(window(outcome))).toEqual([name]);
  });

  it("a path search_files shows as a JSON string (newline, leading quote) is listed as the path itself", async () => {
    const { workspace } = await makeSandbox();
    const quoted = '"draft.md';
    const withNewline = "notes\nplan.md";
    await writeFile(join(workspace, quoted), "needle\n");
    await writeFile(join(workspace, withNewline), "needle\n");
    const outcome = await runTool(searchFilesTool, workspace, { pattern: "needle" });
    expect(expectOk(outcome).split("\n")).toHaveLength(2);
    expect(includedFiles(window(outcome)).sort()).toEqual([quoted, withNewline].sort());
  });

  it("a file matched on several lines is listed once; a search without matches lists none", async () => {
    const { workspace } = await makeSandbox();
    await writeFile(join(workspace, "a.txt"), "needle\nneedle\n");
    const found = await runTool(searchFilesTool, workspace, { pattern: "needle" });
    expect(includedFiles(window(found))).toEqual(["a.txt"]);
    const none = await runTool(searchFilesTool, workspace, { pattern: "haystack" });
    expect(includedFiles(window(none))).toEqual([]);
  });
});
