import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { searchFailedOutcome } from "../../src/tools/search-errors.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { runSearchWorker } from "../../src/tools/search-worker.js";
import { makeSandbox, runTool, shown } from "./helpers.js";

/**
 * A pattern the model chose can overflow V8's regexp backtracking stack on a long line (a
 * file within SEARCH_MAX_FILE_BYTES). The worker used to throw RangeError and the search
 * ended in IO_ERROR 'file-system error on "." (unknown)', not retryable: the model was told the
 * file system failed, and every match in the other files was lost. Such a line is now skipped
 * and counted, the other matches are reported, and a note says how many lines were skipped.
 */
describe("search_files with a pattern that overflows the regexp stack", () => {
  it("reports the matches elsewhere and says how many lines the pattern could not be run on", async () => {
    const { workspace } = await makeSandbox();
    await writeFile(join(workspace, "a-small.txt"), "aaaa\n");
    await writeFile(join(workspace, "b-long.txt"), `${"a".repeat(1_900_000)}\naaa\n`);
    const outcome = await runTool(searchFilesTool, workspace, { pattern: "^((((a))))*$" });
    expect(outcome.ok, shown(outcome)).toBe(true);
    expect(outcome).toMatchObject({ truncated: true });
    expect(shown(outcome).split("\n")).toEqual([
      "a-small.txt:1: aaaa",
      "b-long.txt:2: aaa",
      "[truncated: skipped 1 line the pattern could not be run on (it overflowed the regular-expression engine's stack); simplify the pattern]",
    ]);
  });
});

/**
 * A search worker that fails other than by a file-system error (an exception it did not catch,
 * out of memory) used to reject runSearchWorker, and search_files mapped that to IO_ERROR
 * "file-system error", not retryable. It is now SEARCH_FAILED, retryable; a system error stays
 * a file-system error.
 */
describe("a search worker that fails", () => {
  it("resolves failed with the worker's error (here a pattern the worker cannot compile)", async () => {
    const run = await runSearchWorker({
      data: {
        pattern: "(",
        glob: null,
        maxFiles: 10,
        base: ".",
        fdDir: null,
        files: [],
        maxMatches: 10,
        maxLineChars: 100,
        maxFileBytes: 1000,
        sniffBytes: 100,
      },
      timeLimitMs: 10_000,
      signal: new AbortController().signal,
    });
    expect(run.kind).toBe("failed");
    expect(run.kind === "failed" && searchFailedOutcome(run.error, ".")).toEqual({
      ok: false,
      errorCode: ToolErrorCode.searchFailed,
      message: expect.stringMatching(/^the search failed \(SyntaxError\); .*simplify the pattern/),
      retryable: true,
    });
  });

  it("maps an out-of-memory failure to SEARCH_FAILED naming its code, and a system error to the file-system result", () => {
    const oom = Object.assign(new Error("Worker terminated due to reaching memory limit: JS heap out of memory"), {
      code: "ERR_WORKER_OUT_OF_MEMORY",
    });
    expect(searchFailedOutcome(oom, "src")).toMatchObject({
      errorCode: ToolErrorCode.searchFailed,
      message: expect.stringMatching(/^the search failed \(ERR_WORKER_OUT_OF_MEMORY\)/),
      retryable: true,
    });
    expect(searchFailedOutcome(Object.assign(new Error("i/o"), { code: "EIO" }), "src")).toMatchObject({
      errorCode: ToolErrorCode.ioError,
      message: 'file-system error on "src" (EIO)',
    });
  });
});
