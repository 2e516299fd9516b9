import { execFileSync } from "node:child_process";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { READ_MAX_BYTES, READ_MAX_LINE_CHARS, READ_MAX_LINES, readFileTool } from "../../src/tools/read-file.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

const FIFTY_MB = 50 * 1024 * 1024;

/** Writes `size` bytes made of `line` repeated (the last copy possibly partial), in 1 MiB blocks. */
async function writeRepeated(path: string, line: string, size: number): Promise<void> {
  const block = Buffer.alloc(1024 * 1024, line);
  const handle = await open(path, "w");
  try {
    for (let written = 0; written < size; written += block.length) {
      await handle.write(block, 0, Math.min(block.length, size - written));
    }
  } finally {
    await handle.close();
  }
}

const numbered = (n: number, text: string): string => `${String(n).padStart(6)}\t${text}`;

describe("read_file", () => {
  it("shows every line numbered", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "one\ntwo\nthree\n" });
    const outcome = await runTool(readFileTool, workspace, { path: "a.txt" });
    expect(expectOk(outcome)).toBe([numbered(1, "one"), numbered(2, "two"), numbered(3, "three")].join("\n"));
    expect(outcome).toMatchObject({ truncated: false });
  });

  it("says when a file is not valid UTF-8 (Latin-1) instead of showing replacement characters silently", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "latin1.txt": Buffer.from("caf\xe9\n", "latin1"), "utf8.txt": "café \ufffd\n" });
    const latin = expectOk(await runTool(readFileTool, workspace, { path: "latin1.txt" }));
    expect(latin).toBe(
      `${numbered(1, "caf\ufffd")}\n[note: "latin1.txt" is not valid UTF-8 text; bytes that are not were shown as \ufffd]`,
    );
    // A file that holds U+FFFD itself is valid UTF-8: no note.
    expect(expectOk(await runTool(readFileTool, workspace, { path: "utf8.txt" }))).toBe(numbered(1, "café \ufffd"));
  });

  it("shows only the requested line range, clamping an endLine past the end", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "1\n2\n3\n4\n5" });
    expect(expectOk(await runTool(readFileTool, workspace, { path: "a.txt", startLine: 2, endLine: 3 }))).toBe(
      [numbered(2, "2"), numbered(3, "3")].join("\n"),
    );
    expect(expectOk(await runTool(readFileTool, workspace, { path: "a.txt", startLine: 5, endLine: 99 }))).toBe(
      numbered(5, "5"),
    );
  });

  it("refuses an inverted range or a start past the end with INVALID_LINE_RANGE", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "1\n2\n3\n" });
    const inverted = expectError(
      await runTool(readFileTool, workspace, { path: "a.txt", startLine: 3, endLine: 2 }),
      ToolErrorCode.invalidLineRange,
    );
    expect(inverted).toMatch(/endLine \(2\) is before startLine \(3\)/);
    const past = expectError(
      await runTool(readFileTool, workspace, { path: "a.txt", startLine: 4 }),
      ToolErrorCode.invalidLineRange,
    );
    expect(past).toMatch(/has 3 lines/);
    expect(readFileTool.inputSchema.safeParse({ path: "a.txt", startLine: 0 }).success).toBe(false);
  });

  it("says so for an empty file", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "empty.txt": "" });
    expect(expectOk(await runTool(readFileTool, workspace, { path: "empty.txt" }))).toMatch(/^\(empty file/);
  });

  it("refuses a binary file with BINARY_FILE", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "img.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]) });
    expectError(await runTool(readFileTool, workspace, { path: "img.png" }), ToolErrorCode.binaryFile);
  });

  it("refuses a directory, a FIFO (without blocking) and a missing file", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "dir/x": "" });
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    expectError(await runTool(readFileTool, workspace, { path: "dir" }), ToolErrorCode.notAFile);
    expectError(await runTool(readFileTool, workspace, { path: "pipe" }), ToolErrorCode.notAFile);
    expectError(await runTool(readFileTool, workspace, { path: "missing.txt" }), ToolErrorCode.notFound);
  });

  it(`stops at ${READ_MAX_LINES} lines with a note saying where to continue`, async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "many.txt": Array.from({ length: 3000 }, (_, i) => `l${i + 1}`).join("\n") });
    const outcome = await runTool(readFileTool, workspace, { path: "many.txt" });
    const lines = expectOk(outcome).split("\n");
    expect(lines).toHaveLength(READ_MAX_LINES + 1);
    expect(lines[READ_MAX_LINES - 1]).toBe(numbered(2000, "l2000"));
    expect(lines.at(-1)).toMatch(/truncated: showing lines 1-2000.*startLine=2001/);
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("cuts an over-long line and says how much was cut", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "min.js": `${"x".repeat(READ_MAX_LINE_CHARS + 500)}\nshort\n` });
    const outcome = await runTool(readFileTool, workspace, { path: "min.js" });
    const output = expectOk(outcome);
    expect(output).toContain("[line cut: 500 more characters]");
    expect(output).toContain(numbered(2, "short"));
    expect(output).toMatch(/1 line was cut at 2000 characters/);
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("keeps a multi-byte character that straddles a read-chunk boundary intact", async () => {
    const { workspace } = await makeSandbox();
    // 64 KiB chunks: put "é" (2 bytes) across the boundary at byte 65536, on its own line.
    const before = `${"a".repeat(65534)}\n`;
    await writeTree(workspace, { "utf8.txt": `${before}é\n` });
    const output = expectOk(await runTool(readFileTool, workspace, { path: "utf8.txt", startLine: 2 }));
    expect(output).toBe(numbered(2, "é"));
  });

  describe("on a 50 MB file", () => {
    let workspace = "";
    beforeAll(async () => {
      ({ workspace } = await makeSandbox({ forFile: true }));
      await writeRepeated(join(workspace, "lines.txt"), `${"a".repeat(99)}\n`, FIFTY_MB);
      await writeRepeated(join(workspace, "one-line.txt"), "a", FIFTY_MB);
    });

    it("stays within the byte cap, with a truncation note", async () => {
      const outcome = await runTool(readFileTool, workspace, { path: "lines.txt" });
      const output = expectOk(outcome);
      expect(Buffer.byteLength(output)).toBeLessThanOrEqual(READ_MAX_BYTES + 500);
      expect(output).toMatch(/\[truncated: showing lines 1-\d+; the file \(50\.0 MiB\) has more/);
      expect(outcome).toMatchObject({ truncated: true });
    });

    it("reads a window deep in the file", async () => {
      const output = expectOk(
        await runTool(readFileTool, workspace, { path: "lines.txt", startLine: 400_000, endLine: 400_001 }),
      );
      expect(output).toBe([numbered(400_000, "a".repeat(99)), numbered(400_001, "a".repeat(99))].join("\n"));
    });

    it("shows a single 50 MB line cut to the per-line cap", async () => {
      const outcome = await runTool(readFileTool, workspace, { path: "one-line.txt" });
      const output = expectOk(outcome);
      expect(output.length).toBeLessThan(READ_MAX_LINE_CHARS + 200);
      expect(output).toContain(`[line cut: ${FIFTY_MB - READ_MAX_LINE_CHARS} more characters]`);
      expect(outcome).toMatchObject({ truncated: true });
    });
  });
});
