import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { makeSandbox } from "./helpers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * In a process that has used up its file descriptors (as a flood of connections can make it),
 * a workspace tool's outcome: the built tools, run in a child under `ulimit -n 64` that holds
 * every descriptor left before the call.
 */
function outcomeWithoutDescriptors(workspace: string, tool: "locate" | "shell"): Record<string, unknown> {
  const dist = (file: string) => pathToFileURL(join(root, "dist/src/tools", file)).href;
  const script = `
    import { openSync } from "node:fs";
    import { locateInWorkspace } from ${JSON.stringify(dist("workspace.js"))};
    import { createShellTool } from ${JSON.stringify(dist("shell.js"))};
    const workspace = process.argv[1];
    const held = [];
    try { for (;;) held.push(openSync("/dev/null", "r")); } catch (err) { if (err.code !== "EMFILE") throw err; }
    const outcome = ${JSON.stringify(tool)} === "locate"
      ? (await locateInWorkspace({ workspace, path: "notes.txt" })).outcome
      : await createShellTool({ kind: "none" }).execute({ command: "true" }, { workspace, signal: new AbortController().signal });
    process.stdout.write(JSON.stringify({ held: held.length, outcome }));
  `;
  const out = execFileSync(
    "/bin/sh",
    ["-c", 'ulimit -n 64 && exec "$0" --input-type=module -e "$1" "$2"', process.execPath, script, workspace],
    { encoding: "utf8" },
  );
  const { held, outcome } = JSON.parse(out);
  expect(held).toBeGreaterThan(0);
  return outcome;
}

describe("a process out of file descriptors", () => {
  it("a file tool says so, retryable, instead of calling the workspace missing", async () => {
    const { workspace } = await makeSandbox();
    const outcome = outcomeWithoutDescriptors(workspace, "locate");
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
    expect(String(outcome.message)).toMatch(/no file descriptor left.*EMFILE/);
  });

  it("the shell tool says so too", async () => {
    const { workspace } = await makeSandbox();
    const outcome = outcomeWithoutDescriptors(workspace, "shell");
    expect(outcome).toMatchObject({ ok: false, errorCode: ToolErrorCode.ioError, retryable: true });
  });
});
