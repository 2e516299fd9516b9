import { open, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { READ_MAX_LINE_CHARS, READ_MAX_SCAN_BYTES, readFileTool } from "../../src/tools/read-file.js";
import { expectError, expectOk, makeSandbox, runTool, shown } from "./helpers.js";

const GiB = 1024 ** 3;
/** ext4's largest file (16 TiB less one 4 KiB block): `truncate -s 16T` itself is refused there. */
const ALMOST_16_TiB = 16 * 1024 * GiB - 4096;

/** A workspace holding big.txt: 8 KiB of text, then a hole up to `size` bytes (no disk used). */
async function sparse(size: number): Promise<string> {
  const { workspace } = await makeSandbox();
  const big = join(workspace, "big.txt");
  await writeFile(big, "x".repeat(8192));
  await truncate(big, size);
  return workspace;
}

const within = <T>(promise: Promise<T>, ms: number): Promise<T | "TIMED OUT"> =>
  Promise.race([promise, new Promise<"TIMED OUT">((r) => setTimeout(() => r("TIMED OUT"), ms))]);

describe("attack: read_file on a huge sparse file", () => {
  it("a cancelled run's read_file returns promptly (it is given the abort signal)", async () => {
    const workspace = await sparse(4 * GiB);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const pending = runTool(readFileTool, workspace, { path: "big.txt" }, controller.signal);
    const outcome = await within(pending, 3000);
    await pending;
    expect(outcome).not.toBe("TIMED OUT");
  }, 120_000);

  it("read_file of a 4 GiB sparse file ends within 5 s (a 16 TiB one took ~22 h)", async () => {
    const workspace = await sparse(4 * GiB);
    const started = Date.now();
    const outcome = await runTool(readFileTool, workspace, { path: "big.txt" });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(shown(outcome)).toContain("x".repeat(100));
  }, 120_000);

  // The read of a 4 GiB file may end before an abort at 300 ms: these two hold only when
  // read_file reads a bounded number of bytes, whatever the file's size.
  it("read_file of a 16 TiB sparse file ends within 5 s", async () => {
    const workspace = await sparse(ALMOST_16_TiB);
    const started = Date.now();
    const outcome = await within(runTool(readFileTool, workspace, { path: "big.txt" }), 5000);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(outcome).not.toBe("TIMED OUT");
  }, 120_000);

  it("read_file past the first line of a 16 TiB sparse file ends within 5 s", async () => {
    const workspace = await sparse(ALMOST_16_TiB);
    const started = Date.now();
    const outcome = await within(runTool(readFileTool, workspace, { path: "big.txt", startLine: 2 }), 5000);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(outcome).not.toBe("TIMED OUT");
  }, 120_000);

  it("shows the first line of a 16 TiB file cut, saying the file goes on past what read_file reads", async () => {
    const workspace = await sparse(ALMOST_16_TiB);
    const outcome = await runTool(readFileTool, workspace, { path: "big.txt" });
    const output = expectOk(outcome);
    expect(output).toContain(
      `     1\t${"x".repeat(READ_MAX_LINE_CHARS)}… [line cut: at least ${READ_MAX_SCAN_BYTES - READ_MAX_LINE_CHARS} more characters]`,
    );
    expect(output).toContain(
      "[truncated: showing lines 1-1; the file (16.0 TiB) goes on past its first 64.0 MiB, which is as far as read_file reads (it stopped at line 1)]",
    );
    expect(outcome).toMatchObject({ truncated: true });
  }, 120_000);

  it("refuses a startLine past the first 64 MiB with FILE_TOO_LARGE, naming the line reading reached", async () => {
    const workspace = await sparse(ALMOST_16_TiB);
    const message = expectError(
      await runTool(readFileTool, workspace, { path: "big.txt", startLine: 2 }),
      ToolErrorCode.fileTooLarge,
    );
    expect(message).toBe(
      'startLine 2 lies past the first 64.0 MiB of "big.txt" (16.0 TiB), which is as far as read_file reads: they reach line 1',
    );
  }, 120_000);

  it("reads a file of exactly the limit to its end, counting its cut line whole", async () => {
    const workspace = await sparse(READ_MAX_SCAN_BYTES);
    const outcome = await runTool(readFileTool, workspace, { path: "big.txt" });
    const output = expectOk(outcome);
    expect(output).toContain(`[line cut: ${READ_MAX_SCAN_BYTES - READ_MAX_LINE_CHARS} more characters]`);
    expect(output).not.toContain("goes on");
  }, 120_000);

  it("stops with READ_ABORTED when the run is cancelled while it reads", async () => {
    const workspace = await sparse(4 * GiB);
    const controller = new AbortController();
    const pending = runTool(readFileTool, workspace, { path: "big.txt" }, controller.signal);
    controller.abort();
    expect(expectError(await pending, ToolErrorCode.readAborted)).toBe(
      'reading "big.txt" was stopped because the run was cancelled',
    );
  }, 120_000);

  it("marks a short line that the limit splits as not read to its end", async () => {
    const workspace = await sparse(8192);
    const handle = await open(join(workspace, "big.txt"), "r+");
    try {
      // Line 1 is the 8 KiB of x, line 2 a hole up to the limit, line 3 "xyzw" astride the limit.
      await handle.write("\n", 8191);
      await handle.write("\nxyzw\n", READ_MAX_SCAN_BYTES - 3);
    } finally {
      await handle.close();
    }
    const output = expectOk(await runTool(readFileTool, workspace, { path: "big.txt", startLine: 3 }));
    expect(output.split("\n")[0]).toBe("     3\txy… [line cut: not read to its end]");
    expect(output).toContain("(it stopped at line 3)");
  });
});
