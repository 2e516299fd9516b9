/**
 * A run stopped so that a peer may continue it within moments (its lease lost or not renewed)
 * leaves its tools no grace: the signal's reason is a StopWithoutGrace, and the shell command's
 * whole group gets SIGKILL at once, not SIGTERM and the grace first. The result says why.
 */
import { join } from "node:path";
import { expect, it } from "vitest";
import { StopWithoutGrace } from "../../src/agent/tool.js";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { createShellTool } from "../../src/tools/shell.js";
import { expectError, isRunning, makeSandbox, runTool, waitForFile } from "./helpers.js";

it("a command ignoring SIGTERM is killed at once when the run's signal leaves no grace, and its result says why", async () => {
  const { workspace } = await makeSandbox();
  // A grace no test waits out: were it given, the command would outlive the assertions.
  const tool = createShellTool({ killGraceMs: 60_000 });
  const controller = new AbortController();
  const pending = runTool(
    tool,
    workspace,
    { command: "trap '' TERM; echo $$ > shell.pid; sleep 30 & echo $! > child.pid; sleep 30" },
    controller.signal,
  );
  const pids = [
    Number(await waitForFile(join(workspace, "shell.pid"))),
    Number(await waitForFile(join(workspace, "child.pid"))),
  ];
  controller.abort(new StopWithoutGrace("this server no longer holds the run's lease"));
  const message = expectError(await pending, ToolErrorCode.shellAborted);
  expect(message).toContain("[stopped: this server no longer holds the run's lease;");
  expect(message).toContain("killed at once (SIGKILL, no grace)");
  for (const pid of pids) expect(isRunning(pid)).toBe(false);
});
