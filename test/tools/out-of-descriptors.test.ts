import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { dist, runUnderFileLimit } from "../helpers/file-limit-child.js";
import { makeSandbox, writeTree } from "./helpers.js";

type ToolName = "locate" | "shell" | "write" | "search" | "list";

/**
 * In a process that has used up its file descriptors (as a flood of connections can make it),
 * a workspace tool's outcomes: the built tools, run in a child under `ulimit -n 64` that, for
 * each count in `frees`, holds every descriptor left but that many (enough to open the
 * workspace, say, not what the tool opens next), calls the tool, and lets them all go again;
 * with `untilSuccess` it stops after the first call that succeeds. The child exits 0 only if
 * nothing was left unhandled.
 */
async function outcomesWithoutDescriptors(
  workspace: string,
  tool: ToolName,
  frees: number[],
  untilSuccess = false,
): Promise<Record<string, unknown>[]> {
  const script = `
    import { locateInWorkspace } from ${dist("src/tools/workspace.js")};
    import { closeSync, openSync } from "node:fs";
    import { createShellTool } from ${dist("src/tools/shell.js")};
    import { listFilesTool } from ${dist("src/tools/list-files.js")};
    import { searchFilesTool } from ${dist("src/tools/search-files.js")};
    import { writeFileTool } from ${dist("src/tools/write-file.js")};
    const workspace = process.argv[2];
    const tool = ${JSON.stringify(tool)};
    const call = async () => {
      const context = { workspace, signal: new AbortController().signal };
      return tool === "locate"
        ? (await locateInWorkspace({ workspace, path: "notes.txt" })).outcome
        : tool === "write"
          ? await writeFileTool.execute({ path: "notes.txt", content: "kept" }, context)
          : tool === "search"
            ? await searchFilesTool.execute({ pattern: "kept" }, context)
            : tool === "list"
              ? await listFilesTool.execute({ depth: 10 }, context)
              : await createShellTool({ kind: "none" }).execute({ command: "true" }, context);
    };
    const outcomes = [];
    let least = Infinity;
    for (const free of ${JSON.stringify(frees)}) {
      const held = [];
      try { for (;;) held.push(openSync("/dev/null", "r")); } catch (err) { if (err.code !== "EMFILE") throw err; }
      for (let i = 0; i < free; i++) closeSync(held.pop());
      least = Math.min(least, held.length);
      const outcome = await call();
      // Anything the call left to fail later (an 'error' event nobody listens to) fails here.
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const fd of held) closeSync(fd);
      outcomes.push(outcome);
      if (${untilSuccess} && outcome.ok === true) break;
    }
    process.stdout.write(JSON.stringify({ held: least, outcomes }));
  `;
  const { held, outcomes } = JSON.parse(await runUnderFileLimit(script, [workspace]));
  expect(held).toBeGreaterThan(0);
  return outcomes;
}

/** The outcome of `tool` with `free` descriptors left (see outcomesWithoutDescriptors). */
async function outcomeWithoutDescriptors(
  workspace: string,
  tool: ToolName,
  free = 0,
): Promise<Record<string, unknown>> {
  const [outcome] = await outcomesWithoutDescriptors(workspace, tool, [free]);
  return outcome as Record<string, unknown>;
}

/** The outcomes of `tool` with 1, 2, … descriptors free, up to the first that succeeds (or up to `most` free). */
function outcomesUntilSuccess(workspace: string, tool: "search" | "list", most: number) {
  return outcomesWithoutDescriptors(
    workspace,
    tool,
    Array.from({ length: most }, (_, i) => i + 1),
    true,
  );
}

describe("a process out of file descriptors", () => {
  it("a file tool says so, retryable, instead of calling the workspace missing", async () => {
    const { workspace } = await makeSandbox();
    const outcome = await outcomeWithoutDescriptors(workspace, "locate");
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
    expect(String(outcome.message)).toMatch(/no file descriptor left.*EMFILE/);
  });

  it("the shell tool says so too", async () => {
    const { workspace } = await makeSandbox();
    const outcome = await outcomeWithoutDescriptors(workspace, "shell");
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
  });

  it("the shell tool that opened the workspace but cannot start its command says so, and the process lives on", async () => {
    const { workspace } = await makeSandbox();
    // One descriptor: the workspace opens, the command's pipes do not (spawn's EMFILE).
    const outcome = await outcomeWithoutDescriptors(workspace, "shell", 1);
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
    expect(String(outcome.message)).toMatch(/no file descriptor left.*EMFILE/);
  });

  it("write_file that opened the workspace but cannot open its file says so, retryable", async () => {
    const { workspace } = await makeSandbox();
    const outcome = await outcomeWithoutDescriptors(workspace, "write", 1);
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
    expect(String(outcome.message)).toMatch(/no file descriptor left.*EMFILE/);
  });

  it("search_files whose worker thread cannot start says so, retryable, and the process lives on", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "notes.txt": "kept\n" });
    // One descriptor: the workspace opens, the search's worker thread does not (its event loop's).
    const outcome = await outcomeWithoutDescriptors(workspace, "search", 1);
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
    expect(String(outcome.message)).toMatch(/no file descriptor left.*EMFILE/);
  });

  it("search_files short of descriptors for the files it searches says so, retryable, instead of answering without them", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "top.txt": "kept\n", "a/b/deep.txt": "kept\n" });
    // From one descriptor up, each more: the walk, the worker thread, then the files and
    // directories the worker opens run short in turn, until the search has all it needs.
    const outcomes = await outcomesUntilSuccess(workspace, "search", 24);
    const found = outcomes.pop();
    expect(found).toMatchObject({ ok: true, output: "a/b/deep.txt:1: kept\ntop.txt:1: kept" });
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
      expect(String(outcome.message)).toMatch(/no file descriptor left.*EMFILE/);
    }
    // The worker started at least once without enough left for the files (before: "no matches").
    expect(outcomes.map((outcome) => outcome.message)).toContainEqual(
      expect.stringMatching(/open the files to search/),
    );
  });

  it("list_files and search_files whose walk runs short of descriptors deep in the tree say so, instead of answering without that part", async () => {
    const { workspace } = await makeSandbox();
    // The walk holds a descriptor for each level it is in: eight directories deep, it runs
    // short at some level while the worker (which needs fewer than the walk freed) still starts.
    const deep = "a/b/c/d/e/f/g/h";
    await writeTree(workspace, { "top.txt": "kept\n", [`${deep}/deep.txt`]: "kept\n" });
    const complete = {
      list: [
        ...deep.split("/").map((_, i, parts) => `${parts.slice(0, i + 1).join("/")}/`),
        `${deep}/deep.txt`,
        "top.txt",
      ].join("\n"),
      search: `${deep}/deep.txt:1: kept\ntop.txt:1: kept`,
    };
    for (const tool of ["list", "search"] as const) {
      const outcomes = await outcomesUntilSuccess(workspace, tool, 32);
      // Before: a part of the tree (list_files), "top.txt:1: kept" alone (search_files), as if complete.
      expect(outcomes.pop(), tool).toMatchObject({ ok: true, output: complete[tool] });
      for (const outcome of outcomes) {
        expect(outcome, tool).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
        expect(String(outcome.message), tool).toMatch(/no file descriptor left.*EMFILE/);
      }
    }
  });

  it("a process-group watchdog that cannot be started is reported as none (null), with nothing left unhandled", async () => {
    const script = `
      import { watchProcessGroup } from ${dist("src/tools/group-watchdog.js")};
      import { openSync } from "node:fs";
      const held = [];
      try { for (;;) held.push(openSync("/dev/null", "r")); } catch (err) { if (err.code !== "EMFILE") throw err; }
      const watchdog = watchProcessGroup(process.pid);
      // An 'error' event the spawn left for later, unhandled, would end this child non-zero.
      await new Promise((resolve) => setTimeout(resolve, 100));
      process.stdout.write(JSON.stringify({ held: held.length, watchdog: watchdog === null ? "none" : "returned" }));
    `;
    const { held, watchdog } = JSON.parse(await runUnderFileLimit(script));
    expect(held).toBeGreaterThan(0);
    expect(watchdog).toBe("none");
  });
});
