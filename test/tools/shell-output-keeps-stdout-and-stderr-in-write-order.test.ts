import { existsSync, writeFileSync } from "node:fs";
import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { resolveShellSandbox, type ShellSandbox, type ShellSandboxMode } from "../../src/tools/sandbox.js";
import { createShellTool } from "../../src/tools/shell.js";
import { expectError, expectOk, makeSandbox, runTool, waitForFile } from "./helpers.js";

/** Sleeps the calling thread (the event loop with it) for `ms`. */
const sleepSync = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

const SETTINGS = { network: false, tmpBytes: 16 * 1024 * 1024, maxProcesses: 1024 };

/** The sandbox of SHELL_SANDBOX=`mode` for workspaces under `directory` (bwrap must work here: CI installs it). */
function sandboxOf(mode: ShellSandboxMode, directory: string): ShellSandbox {
  const resolved = resolveShellSandbox({ mode, directory, ...SETTINGS });
  if (!resolved.ok) throw new Error(`bwrap must work for these tests (install bubblewrap): ${resolved.problem}`);
  return resolved.sandbox;
}

describe("shell: the combined output", () => {
  it.each(["off", "bwrap"] as const)(
    "shows stdout and stderr in the order the command wrote them, even when the server reads them late (SHELL_SANDBOX=%s)",
    async (mode) => {
      const { base, workspace } = await makeSandbox();
      const tool = createShellTool({ sandbox: sandboxOf(mode, base) });
      // The command waits for "go", then writes to stdout and stderr alternately (as a build
      // printing progress and errors does), then marks that it is done.
      const command =
        "echo ready > ready; while [ ! -e go ]; do sleep 0.01; done; " +
        "echo 1; echo 2 >&2; echo 3; echo 4 >&2; echo 5; : > done";
      const pending = runTool(tool, workspace, { command });
      await waitForFile(join(workspace, "ready"), 15_000);
      // The server is busy (another run's work) while the command writes: had it two pipes,
      // both would hold output by the time it reads them. The wait is bounded; it ends once
      // the command is done.
      writeFileSync(join(workspace, "go"), "");
      const end = Date.now() + 15_000;
      while (!existsSync(join(workspace, "done")) && Date.now() < end) sleepSync(10);
      expect(existsSync(join(workspace, "done"))).toBe(true);

      const output = expectOk(await pending);
      // A model reading a failing build must see each error next to the output it belongs to.
      expect(output).toBe("1\n2\n3\n4\n5\n[exit code 0]");
    },
  );

  it("still shows what the sandbox program itself writes to stderr (bwrap's own errors)", async () => {
    const { base, workspace } = await makeSandbox();
    // A bwrap that fails as one does where it cannot make the sandbox.
    const bwrap = join(base, "bwrap");
    await writeFile(
      bwrap,
      '#!/bin/sh\necho "bwrap: Creating new namespace failed: Operation not permitted" >&2\nexit 1\n',
    );
    await chmod(bwrap, 0o755);
    const tool = createShellTool({ sandbox: { kind: "bwrap", bwrap, ...SETTINGS, options: { disableUserns: true } } });
    const message = expectError(await runTool(tool, workspace, { command: "true" }), ToolErrorCode.shellFailed);
    expect(message).toBe("bwrap: Creating new namespace failed: Operation not permitted\n[exit code 1]");
  });
});
