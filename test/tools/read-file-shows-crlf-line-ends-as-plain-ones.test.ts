import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { READ_CHUNK_BYTES, readFileTool } from "../../src/tools/read-file.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

/** The texts of read_file's numbered lines (the number and tab taken off), notes left out. */
const texts = (output: string): string[] =>
  output
    .split("\n")
    .filter((line) => /^ *\d+\t/.test(line))
    .map((line) => line.slice(line.indexOf("\t") + 1));

describe("read_file shows a CRLF line end as a plain one", () => {
  it("shows no \\r of a CRLF line end, also where its \\r and \\n fall in two reads of the file", async () => {
    const { workspace } = await makeSandbox();
    // A first line of 535 characters, then lines of 998: line 66's \r is the first read's last byte.
    const lines = ["f".repeat(535), ...Array.from({ length: 70 }, (_, i) => String(i).padEnd(998, "x"))];
    const content = `${lines.join("\r\n")}\r\n`;
    expect(
      Buffer.from(content)
        .subarray(READ_CHUNK_BYTES - 1, READ_CHUNK_BYTES + 1)
        .toString(),
    ).toBe("\r\n");
    await writeTree(workspace, { "a.txt": content });

    const outcome = await runTool(readFileTool, workspace, { path: "a.txt" });
    const output = expectOk(outcome);
    expect(output.includes("\r"), "a \\r shown").toBe(false);
    expect(texts(output)).toEqual(lines);
    expect(outcome).toMatchObject({ truncated: false });
  });

  it("shows a CRLF line as search_files does, and its text copied into edit_file's oldText keeps the file CRLF", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.js": "function a() {\r\n  return 1;\r\n}\r\n" });
    const output = expectOk(await runTool(readFileTool, workspace, { path: "a.js" }));
    expect(output).toBe("     1\tfunction a() {\n     2\t  return 1;\n     3\t}");
    expect(expectOk(await runTool(searchFilesTool, workspace, { pattern: "return" }))).toContain("a.js:2:   return 1;");

    const oldText = texts(output).slice(0, 2).join("\n");
    expectOk(await runTool(editFileTool, workspace, { path: "a.js", oldText, newText: "function a() {\n  return 2;" }));
    expect(await readFile(join(workspace, "a.js"), "utf8")).toBe("function a() {\r\n  return 2;\r\n}\r\n");
  });

  it("names the lines ending in CRLF when the lines shown end both ways", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "a\r\nb\nc\r\nd\r\ne\nf" });
    const outcome = await runTool(readFileTool, workspace, { path: "a.txt" });
    expect(expectOk(outcome)).toBe(
      "     1\ta\n     2\tb\n     3\tc\n     4\td\n     5\te\n     6\tf\n" +
        "[note: the lines shown end both in CRLF (\\r\\n) and in LF (\\n), both shown as plain line ends; " +
        "those ending in CRLF: 1, 3-4]",
    );
    // A note, not a cut: everything was shown.
    expect(outcome).toMatchObject({ truncated: false });
  });
});
