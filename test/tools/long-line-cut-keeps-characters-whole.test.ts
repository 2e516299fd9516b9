import { describe, expect, it } from "vitest";
import { READ_MAX_LINE_CHARS, readFileTool } from "../../src/tools/read-file.js";
import { SEARCH_MAX_LINE_CHARS, searchFilesTool } from "../../src/tools/search-files.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

const EMOJI = "\u{1F600}"; // one character, two UTF-16 code units

/** No lone surrogate (String.prototype.isWellFormed, which the project's TypeScript lib predates). */
const isWellFormed = (text: string): boolean => !/[\uD800-\uDFFF]/u.test(text);

describe("cutting an over-long line keeps every character whole", () => {
  it("read_file never shows half of a character where it cuts a line", async () => {
    const { workspace } = await makeSandbox();
    // One ASCII character, then emoji: a cut after READ_MAX_LINE_CHARS UTF-16 code units would fall inside one.
    await writeTree(workspace, { "emoji.txt": `a${EMOJI.repeat(READ_MAX_LINE_CHARS)}\n` });
    const output = expectOk(await runTool(readFileTool, workspace, { path: "emoji.txt" }));
    expect(output).toMatch(/\[line cut/);
    // The cap counts characters, and so does the note: the last emoji is the one character left out.
    expect(output.split("\n")[0]).toBe(
      `     1\ta${EMOJI.repeat(READ_MAX_LINE_CHARS - 1)}… [line cut: 1 more character]`,
    );
    // A lone surrogate is not text: stored, it turns into U+FFFD; sent upstream, it is a stray half character.
    expect(isWellFormed(output)).toBe(true);
  });

  it("search_files never shows half of a character where it cuts a matching line", async () => {
    const { workspace } = await makeSandbox();
    // A window starting SEARCH_MAX_LINE_CHARS/4 UTF-16 code units before the match would start inside an emoji.
    await writeTree(workspace, {
      "emoji.txt": `${EMOJI.repeat(SEARCH_MAX_LINE_CHARS)}needle${"x".repeat(SEARCH_MAX_LINE_CHARS)}\n`,
    });
    const output = expectOk(await runTool(searchFilesTool, workspace, { pattern: "needle" }));
    expect(output).toMatch(/^emoji\.txt:1: …/);
    // A window of SEARCH_MAX_LINE_CHARS characters, a quarter of them before the match; the note gives
    // the line's length in characters.
    const before = Math.floor(SEARCH_MAX_LINE_CHARS / 4);
    expect(output).toBe(
      `emoji.txt:1: …${EMOJI.repeat(before)}needle${"x".repeat(SEARCH_MAX_LINE_CHARS - before - 6)}` +
        `… [line cut: the line has ${2 * SEARCH_MAX_LINE_CHARS + 6} characters]`,
    );
    expect(isWellFormed(output)).toBe(true);
  });
});
