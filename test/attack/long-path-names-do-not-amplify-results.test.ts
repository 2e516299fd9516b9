/**
 * A malicious model (through a sandboxed shell command, or write_file calls) or a hostile
 * repository plants a deep tree of names made of control characters, then asks for a tiny
 * search or listing. Each path is shown JSON-quoted (six characters per control byte); shown
 * once per match or entry, a call whose input is a few bytes produced a result of many
 * megabytes (search_files 19.6 MB, list_files 7.6 MB), stored with the run, replayed to every
 * watcher and sent to the model. A long path is now written once above the lines under it,
 * and each result is capped in characters (read_file is capped at 100,000 bytes, shell at
 * 32 KiB).
 */
import { spawnSync } from "node:child_process";
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolOutcome } from "../../src/agent/tool.js";
import { LONG_PATH_CHARS } from "../../src/tools/display-path.js";
import { workspaceTools } from "../../src/tools/index.js";
import { LIST_MAX_OUTPUT_CHARS } from "../../src/tools/list-files.js";
import { SEARCH_MAX_OUTPUT_CHARS } from "../../src/tools/search-files.js";
import { expectOk, runTool } from "../tools/helpers.js";

const tool = (name: string) => workspaceTools.find((t) => t.name === name)!;
/** A name as long as the file system allows (NAME_MAX), all control characters. */
const NAME = "\u0001".repeat(255);
/** NAME_MAX characters too, all control characters but the number that tells them apart. */
const numbered = (i: number) => `${NAME.slice(0, 250)}${String(i).padStart(5, "0")}`;
const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY;
/** What any other tool's result is held to (shell: 32 KiB, read_file: 100,000 bytes), generously. */
const MAX_RESULT_CHARS = 1024 * 1024;

/** Makes `depth` nested directories named NAME below `workspace` (past PATH_MAX, as `cd` steps would) and runs `inside` in the deepest. */
function deepChain(workspace: string, depth: number, inside: (dir: string) => void): void {
  let fd = openSync(workspace, O_DIR);
  try {
    for (let i = 0; i < depth; i++) {
      mkdirSync(`/proc/self/fd/${fd}/${NAME}`);
      const next = openSync(`/proc/self/fd/${fd}/${NAME}`, O_DIR);
      closeSync(fd);
      fd = next;
    }
    inside(`/proc/self/fd/${fd}`);
  } finally {
    closeSync(fd);
  }
}

const made: string[] = [];
afterEach(() => {
  // rm walks a tree past PATH_MAX (fs.rm does not).
  for (const dir of made.splice(0)) spawnSync("rm", ["-rf", dir]);
});

/** A fresh workspace directory (its real path). */
function makeWorkspace(): string {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "review-atk-paths-")));
  made.push(base);
  const workspace = join(base, "workspace");
  mkdirSync(workspace);
  return workspace;
}

const lastLine = (output: string) => output.slice(output.lastIndexOf("\n") + 1);

describe("a tiny call cannot produce a result of megabytes through planted path names", () => {
  it("search_files: 200 matches in one deep file do not repeat a 100 KB quoted path 200 times", async () => {
    const workspace = makeWorkspace();
    deepChain(workspace, 63, (dir) => writeFileSync(`${dir}/${NAME}`, "x\n".repeat(300)));
    const outcome = await runTool(tool("search_files"), workspace, { pattern: "x" });
    const output = expectOk(outcome);
    expect(output.split("\n").length).toBeGreaterThan(200);
    expect(output.length).toBeLessThanOrEqual(MAX_RESULT_CHARS);

    // The path is written once, above its matches; each match names only its line.
    const relative = Array.from({ length: 64 }, () => NAME).join("/");
    const lines = output.split("\n");
    expect(lines[0]).toBe(`${JSON.stringify(relative)}:`);
    expect(lines.slice(1, 201)).toEqual(Array.from({ length: 200 }, (_, i) => `  ${i + 1}: x`));
    expect(lines.slice(201)).toEqual(["[truncated: stopped after 200 matches; narrow the pattern, path or glob]"]);
    expect(outcome).toMatchObject({ truncated: true, files: [relative] });
  });

  it("search_files: one match in each of 200 deep files stops at the result's character cap and says so", async () => {
    const workspace = makeWorkspace();
    deepChain(workspace, 62, (dir) => {
      for (let i = 0; i < 200; i++) {
        mkdirSync(`${dir}/${numbered(i)}`);
        writeFileSync(`${dir}/${numbered(i)}/${NAME}`, "x\n");
      }
    });
    const outcome = await runTool(tool("search_files"), workspace, { pattern: "x" });
    const output = expectOk(outcome);
    expect(output.length).toBeLessThanOrEqual(SEARCH_MAX_OUTPUT_CHARS + 300);
    const shown = output.split("\n").filter((line) => line === "  1: x").length;
    expect(shown).toBeGreaterThan(0);
    expect(lastLine(output)).toBe(
      `[truncated: showing ${shown} of the 200 matches found, as many as fit in ${SEARCH_MAX_OUTPUT_CHARS} characters; ` +
        "narrow the pattern, path or glob]",
    );
    expect(outcome).toMatchObject({ truncated: true });
    expect(outcome.ok && outcome.files).toHaveLength(shown);
  });

  it("list_files: 500 entries at depth 10 do not each carry a 15 KB quoted path", async () => {
    const workspace = makeWorkspace();
    deepChain(workspace, 9, (dir) => {
      for (let i = 0; i < 500; i++) writeFileSync(`${dir}/${numbered(i)}`, "");
    });
    const outcome = await runTool(tool("list_files"), workspace, { depth: 10 });
    const output = expectOk(outcome);
    // The longest names there are, quoted (1,532 characters each): as many as the cap holds,
    // each line its name alone (with the few headers of the directories on the way).
    expect(output.split("\n").length).toBeGreaterThan(LIST_MAX_OUTPUT_CHARS / 2500);
    expect(output.length).toBeLessThanOrEqual(MAX_RESULT_CHARS);

    // The deepest directory's path is written once; its files follow by name.
    const deepest = Array.from({ length: 9 }, () => NAME).join("/");
    const lines = output.split("\n");
    const header = lines.indexOf(`${JSON.stringify(deepest)}/:`);
    expect(header).toBeGreaterThan(0);
    expect(lines[header + 1]).toBe(`  ${JSON.stringify(numbered(0))}`);
    expect(lines.every((line) => line.length <= JSON.stringify(deepest).length + 2)).toBe(true);
    expect(lastLine(output)).toMatch(
      new RegExp(
        `^\\[truncated: showing the first \\d+ entries, as many as fit in ${LIST_MAX_OUTPUT_CHARS} characters; `,
      ),
    );
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("list_files: entries under many deep directories stop at the result's character cap and say so", async () => {
    const workspace = makeWorkspace();
    // Each file's directory differs from the one before, so every file brings its directory's header.
    deepChain(workspace, 8, (dir) => {
      for (let i = 0; i < 250; i++) {
        mkdirSync(`${dir}/${numbered(i)}`);
        writeFileSync(`${dir}/${numbered(i)}/${NAME}`, "");
      }
    });
    const outcome: ToolOutcome = await runTool(tool("list_files"), workspace, { depth: 10 });
    const output = expectOk(outcome);
    expect(output.length).toBeLessThanOrEqual(LIST_MAX_OUTPUT_CHARS + 300);
    expect(lastLine(output)).toMatch(
      new RegExp(
        `^\\[truncated: showing the first \\d+ entries, as many as fit in ${LIST_MAX_OUTPUT_CHARS} characters; ` +
          "list a subdirectory or use a smaller depth to see the rest\\]$",
      ),
    );
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("short paths keep `path:line: text` and one path per line", async () => {
    const workspace = makeWorkspace();
    const dir = "d".repeat(LONG_PATH_CHARS - 2);
    mkdirSync(join(workspace, dir));
    writeFileSync(join(workspace, dir, "a"), "x\nx\n");
    expect(expectOk(await runTool(tool("search_files"), workspace, { pattern: "x" }))).toBe(
      `${dir}/a:1: x\n${dir}/a:2: x`,
    );
    expect(expectOk(await runTool(tool("list_files"), workspace, {}))).toBe(`${dir}/\n${dir}/a`);
  });
});
