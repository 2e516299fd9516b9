import { readdirSync } from "node:fs";
import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import {
  createSearchFilesTool,
  SEARCH_MAX_FILE_BYTES,
  SEARCH_MAX_LINE_CHARS,
  SEARCH_MAX_MATCHES,
  searchFilesTool,
} from "../../src/tools/search-files.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

describe("search_files", () => {
  it("reports matching lines as file:line: text, in path order", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, {
      "src/b.ts": "const b = 2;\nexport function beta() {}\n",
      "src/a.ts": "export function alpha() {}\r\nconst a = 1;\n",
      "README.md": "no code here\n",
    });
    const outcome = await runTool(searchFilesTool, workspace, { pattern: "function \\w+\\(" });
    expect(expectOk(outcome)).toBe("src/a.ts:1: export function alpha() {}\nsrc/b.ts:2: export function beta() {}");
    expect(outcome).toMatchObject({ truncated: false });
  });

  it("filters by a file-name glob or a path glob, and searches a subdirectory or single file", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, {
      "src/x.ts": "hit\n",
      "src/x.test.ts": "hit\n",
      "src/deep/y.js": "hit\n",
      "docs/z.md": "hit\n",
    });
    const search = async (input: Record<string, string>) =>
      expectOk(await runTool(searchFilesTool, workspace, { pattern: "hit", ...input })).split("\n");
    expect(await search({ glob: "*.ts" })).toEqual(["src/x.test.ts:1: hit", "src/x.ts:1: hit"]);
    expect(await search({ glob: "*.{js,md}" })).toEqual(["docs/z.md:1: hit", "src/deep/y.js:1: hit"]);
    expect(await search({ glob: "src/**/*.js" })).toEqual(["src/deep/y.js:1: hit"]);
    expect(await search({ path: "docs" })).toEqual(["docs/z.md:1: hit"]);
    expect(await search({ path: "src/x.ts" })).toEqual(["src/x.ts:1: hit"]);
  });

  it("says so when nothing matches", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "abc\n", "b.txt": "def\n" });
    expect(expectOk(await runTool(searchFilesTool, workspace, { pattern: "xyz" }))).toBe(
      "no matches in 2 files searched",
    );
  });

  it("skips binary files, .git and node_modules", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, {
      "bin.dat": Buffer.concat([Buffer.from("needle"), Buffer.from([0])]),
      ".git/config": "needle\n",
      "node_modules/p/index.js": "needle\n",
      "src.js": "needle\n",
    });
    const output = expectOk(await runTool(searchFilesTool, workspace, { pattern: "needle" }));
    expect(output).toBe("src.js:1: needle\n[skipped 1 binary file]");
  });

  it("cuts a long matching line to a window around the match", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "min.js": `${"x".repeat(10_000)}NEEDLE${"y".repeat(10_000)}\n` });
    const output = expectOk(await runTool(searchFilesTool, workspace, { pattern: "NEEDLE" }));
    expect(output).toContain("NEEDLE");
    expect(output.length).toBeLessThan(SEARCH_MAX_LINE_CHARS + 100);
    expect(output).toMatch(/^min\.js:1: …x+NEEDLEy+… \[line cut: the line has 20006 characters\]$/);
  });

  it(`stops after ${SEARCH_MAX_MATCHES} matches with a truncation note`, async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "many.txt": "match\n".repeat(1000) });
    const outcome = await runTool(searchFilesTool, workspace, { pattern: "match" });
    const lines = expectOk(outcome).split("\n");
    expect(lines).toHaveLength(SEARCH_MAX_MATCHES + 1);
    expect(lines.at(-1)).toMatch(/^\[truncated: stopped after 200 matches/);
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("skips a 50 MB file with a truncation note and stays within caps", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "small.txt": "aaa\n" });
    const handle = await open(join(workspace, "huge.txt"), "w");
    const block = Buffer.alloc(1024 * 1024, "aaaaaaaaa\n");
    for (let i = 0; i < 50; i++) await handle.write(block);
    await handle.close();
    const outcome = await runTool(searchFilesTool, workspace, { pattern: "a+" });
    const output = expectOk(outcome);
    expect(output).toBe(
      `small.txt:1: aaa\n[truncated: skipped 1 file larger than ${SEARCH_MAX_FILE_BYTES / 1024 / 1024}.0 MiB; read them with read_file]`,
    );
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("refuses an invalid regular expression or glob with INVALID_PATTERN", async () => {
    const { workspace } = await makeSandbox();
    const message = expectError(
      await runTool(searchFilesTool, workspace, { pattern: "foo(" }),
      ToolErrorCode.invalidPattern,
    );
    expect(message).toMatch(/not a valid JavaScript regular expression/);
    expectError(
      await runTool(searchFilesTool, workspace, { pattern: "a", glob: "*.{ts" }),
      ToolErrorCode.invalidPattern,
    );
    expectError(
      await runTool(searchFilesTool, workspace, { pattern: "a", glob: "[abc" }),
      ToolErrorCode.invalidPattern,
    );
  });

  it("refuses a search path outside the workspace or missing", async () => {
    const { workspace } = await makeSandbox();
    expectError(
      await runTool(searchFilesTool, workspace, { pattern: "root", path: "/etc" }),
      ToolErrorCode.pathOutsideWorkspace,
    );
    expectError(await runTool(searchFilesTool, workspace, { pattern: "x", path: "nope" }), ToolErrorCode.notFound);
  });

  it("stops a catastrophically backtracking pattern with SEARCH_TIMEOUT", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "evil.txt": `${"a".repeat(40)}!\n` });
    const tool = createSearchFilesTool({ timeLimitMs: 300 });
    const started = Date.now();
    const outcome = await runTool(tool, workspace, { pattern: "(a+)+$" });
    expectError(outcome, ToolErrorCode.searchTimeout);
    expect(outcome).toMatchObject({ retryable: true });
    // Unstopped, this match runs for many minutes (~2^40 steps): a bound of seconds shows the stop.
    // It leaves room for a worker's start on a loaded machine (2 s failed once at load ~8).
    expect(Date.now() - started).toBeLessThan(10_000);
    // The server's thread was never blocked: a normal search still works right after (with the
    // default time limit: on a loaded machine a worker's start alone may take 300 ms).
    expectOk(await runTool(createSearchFilesTool(), workspace, { pattern: "!" }));
  });

  it("a search stopped mid-match leaves no descriptor open (the worker held the file's directories)", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a/b/c/d/evil.txt": `${"a".repeat(40)}!\n` });
    const tool = createSearchFilesTool({ timeLimitMs: 400 });
    const openDescriptors = () => readdirSync("/proc/self/fd").length;
    const before = openDescriptors();
    for (let i = 0; i < 3; i++)
      expectError(await runTool(tool, workspace, { pattern: "(a+)+$" }), ToolErrorCode.searchTimeout);
    expect(openDescriptors()).toBeLessThanOrEqual(before);
  });

  it("stops a running search when the run is cancelled, with SEARCH_ABORTED", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "evil.txt": `${"a".repeat(40)}!\n` });
    const controller = new AbortController();
    const started = Date.now();
    const pending = runTool(searchFilesTool, workspace, { pattern: "(a+)+$" }, controller.signal);
    // Whenever the abort lands (walking or matching), the result is the same.
    setTimeout(() => controller.abort(), 100);
    expectError(await pending, ToolErrorCode.searchAborted);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe("search_files glob", () => {
  it("a catastrophically backtracking glob cannot hang the server: it ends in SEARCH_TIMEOUT", async () => {
    const dir = await mkdtemp(join(tmpdir(), "glob-redos-"));
    try {
      await writeFile(join(dir, `${"a".repeat(60)}.txt`), "hello\n");
      const tool = createSearchFilesTool({ timeLimitMs: 600 });
      const started = Date.now();
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 20);
      const outcome = await tool.execute(
        { pattern: "hello", glob: `${"*a".repeat(14)}*b` },
        { workspace: dir, signal: new AbortController().signal, toolCallId: "t" },
      );
      clearInterval(ticker);
      expect(outcome.ok).toBe(false);
      expect(outcome.ok === false && outcome.errorCode).toBe("SEARCH_TIMEOUT");
      expect(Date.now() - started).toBeLessThan(5000);
      // The event loop kept running while the glob backtracked: blocked for the search, a 20 ms
      // interval fires at most once (its late calls coalesce); a loaded machine may run it only
      // a few times over the search's 600 ms.
      expect(ticks).toBeGreaterThanOrEqual(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
