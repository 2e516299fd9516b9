import { describe, expect, it } from "vitest";
import { resolveToolCall } from "../../src/agent/resolve-tool-call.js";
import { bindWorkspaceTools } from "../../src/tools/index.js";
import { PATH_MAX_CHARS, pathInput } from "../../src/tools/path-input.js";

describe("a workspace tool's path", () => {
  it("is at most PATH_MAX_CHARS characters, counted in code points", () => {
    expect(pathInput.safeParse("a".repeat(PATH_MAX_CHARS)).success).toBe(true);
    // Two UTF-16 units each, one character each.
    expect(pathInput.safeParse("😀".repeat(PATH_MAX_CHARS)).success).toBe(true);
    const over = pathInput.safeParse(`${"😀".repeat(PATH_MAX_CHARS)}a`);
    expect(over.error?.issues.map((issue) => issue.message)).toEqual([
      `a path is at most ${PATH_MAX_CHARS} characters (PATH_MAX); this one has 4,097`,
    ]);
  });

  it("past it, the call is answered INVALID_ARGUMENTS before the tool runs, the path not echoed", () => {
    const tools = new Map(bindWorkspaceTools({ workspace: "/nonexistent" }).map((tool) => [tool.name, tool]));
    const path = "x/".repeat(50_000);
    const calls: Record<string, object> = {
      list_files: { path },
      read_file: { path },
      search_files: { pattern: "p", path },
      write_file: { path, content: "" },
      edit_file: { path, oldText: "a", newText: "b" },
    };
    for (const [name, args] of Object.entries(calls)) {
      const resolved = resolveToolCall({ id: "c", name, input: JSON.stringify(args) }, tools);
      expect(resolved, name).toEqual({
        ok: false,
        outcome: {
          ok: false,
          errorCode: "INVALID_ARGUMENTS",
          message: `invalid arguments: path: a path is at most ${PATH_MAX_CHARS} characters (PATH_MAX); this one has 100,000`,
          retryable: true,
        },
      });
    }
  });
});
