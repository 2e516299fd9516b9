import { describe, expect, it } from "vitest";
import { READ_MAX_LINE_CHARS, readFileTool } from "../../src/tools/read-file.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

describe("read_file on a file with CRLF line ends", () => {
  it(`shows a line of exactly ${READ_MAX_LINE_CHARS} characters whole, as it does with LF line ends`, async () => {
    const { workspace } = await makeSandbox();
    const line = "x".repeat(READ_MAX_LINE_CHARS);
    await writeTree(workspace, { "lf.txt": `${line}\nshort\n`, "crlf.txt": `${line}\r\nshort\r\n` });

    // With LF the line is within the cap: shown whole, nothing truncated.
    const lf = await runTool(readFileTool, workspace, { path: "lf.txt" });
    expect(expectOk(lf)).not.toContain("[line cut");
    expect(lf).toMatchObject({ truncated: false });

    // The same line with a CRLF line end: the \r is the line's end, not a character of its
    // text past the cap. Cut, the model is told a character of the line is hidden from it (it
    // cannot copy the line into edit_file's oldText, and no startLine shows the rest).
    const crlf = await runTool(readFileTool, workspace, { path: "crlf.txt" });
    const output = expectOk(crlf);
    expect(output).not.toContain("[line cut");
    expect(output).not.toContain("was cut at");
    expect(crlf).toMatchObject({ truncated: false });
    expect(output.split("\n")[0]).toContain(line);
  });
});
