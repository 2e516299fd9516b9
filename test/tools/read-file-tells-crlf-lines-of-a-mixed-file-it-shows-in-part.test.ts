import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { READ_MAX_LINES, readFileTool } from "../../src/tools/read-file.js";
import { expectOk, makeSandbox, runTool, writeTree } from "../tools/helpers.js";

/**
 * read_file no longer shows the \r of a CRLF line end, and names CRLF lines only when the lines
 * it shows end both ways. edit_file reads oldText's \n as \r\n only in a file whose line ends
 * are all CRLF. A file that ends lines both ways, read in part (a range, or the first page of
 * a capped read) where the lines shown all end in CRLF, then shows nothing of its CRLF ends:
 * an edit built from what was shown is not found ("line ends are mixed: write \r\n where the
 * text has it"), and reading again never tells where that is. Before this change the \r was
 * shown in the line's text.
 */
const texts = (output: string): string[] =>
  output
    .split("\n")
    .filter((line) => /^ *\d+\t/.test(line))
    .map((line) => line.slice(line.indexOf("\t") + 1));

describe("read_file of part of a file whose line ends are mixed", () => {
  it("tells which of the lines it shows end in CRLF when the file is not all CRLF", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": "function a() {\r\n  return 1;\r\n}\r\n// added on another system\n" });

    const output = expectOk(await runTool(readFileTool, workspace, { path: "a.js", startLine: 1, endLine: 3 }));
    // What an edit built from the output meets: not found, the file's ends being mixed.
    const oldText = texts(output).slice(0, 2).join("\n");
    const edit = await runTool(editFileTool, workspace, {
      path: "a.js",
      oldText,
      newText: "function a() {\n  return 2;",
    });
    expect(edit.ok, "the edit built from read_file's output is refused").toBe(false);

    // So the read must have said where the \r\n are: a \r shown, or a note naming lines 1-3.
    // Actual: "     1\tfunction a() {\n     2\t  return 1;\n     3\t}" — nothing of CRLF.
    expect(output.includes("\r") || /CRLF[^\]]*1-3/.test(output), output).toBe(true);
  });

  it("tells them on the first page of a capped read too, and says nothing of a whole file all CRLF", async () => {
    const { workspace } = await makeSandbox();
    const crlf = Array.from({ length: READ_MAX_LINES + 1 }, (_, i) => `line ${i + 1}\r\n`).join("");
    await writeTree(workspace, { "big.txt": `${crlf}last\n`, "all.txt": "one\r\ntwo\r\n" });

    const page = expectOk(await runTool(readFileTool, workspace, { path: "big.txt" }));
    expect(page).toContain(`lines ending in CRLF among those shown: 1-${READ_MAX_LINES}]`);
    // All CRLF and read whole: edit_file reads \n as \r\n there, nothing to tell.
    expect(expectOk(await runTool(readFileTool, workspace, { path: "all.txt" }))).not.toContain("CRLF");
  });
});
