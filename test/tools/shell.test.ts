import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import {
  createShellTool,
  SHELL_MAX_TIMEOUT_MS,
  SHELL_OUTPUT_HEAD_BYTES,
  SHELL_OUTPUT_TAIL_BYTES,
  shellTool,
} from "../../src/tools/shell.js";
import { expectError, expectOk, isRunning, makeSandbox, runTool, shown, waitForFile } from "./helpers.js";

/** Writes the shell's pid and a background grandchild's pid, then waits in the foreground. */
const SPAWN_FAMILY = "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; sleep 30";

const strays: number[] = [];
afterEach(() => {
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
});

async function familyPids(workspace: string): Promise<number[]> {
  const pids = [
    Number(await waitForFile(join(workspace, "shell.pid"))),
    Number(await waitForFile(join(workspace, "child.pid"))),
  ];
  strays.push(...pids);
  return pids;
}

describe("shell", () => {
  it("runs in the workspace and returns stdout and stderr together with exit code 0", async () => {
    const { workspace } = await makeSandbox();
    const outcome = await runTool(shellTool, workspace, { command: "pwd; echo out; echo err >&2" });
    expect(expectOk(outcome)).toBe(`${workspace}\nout\nerr\n[exit code 0]`);
    expect(outcome).toMatchObject({ truncated: false });
  });

  it("reports a non-zero exit as SHELL_FAILED with the output and the exit code", async () => {
    const { workspace } = await makeSandbox();
    const outcome = await runTool(shellTool, workspace, { command: "echo something broke; exit 3" });
    expect(expectError(outcome, ToolErrorCode.shellFailed)).toBe("something broke\n[exit code 3]");
    expect(outcome).toMatchObject({ retryable: true });
  });

  it("runs with stdin closed, so a command reading input does not wait", async () => {
    const { workspace } = await makeSandbox();
    expect(expectOk(await runTool(shellTool, workspace, { command: "cat; echo done" }))).toBe("done\n[exit code 0]");
  });

  it("hides the server's secrets from the command's environment", async () => {
    const { workspace } = await makeSandbox();
    const planted = {
      OPENAI_API_KEY: "sk-test-secret-openai",
      AGENT_API_KEYS: "agent-key-1,agent-key-2",
      DATABASE_PATH: "/secret/db/path",
      LC_ALL: "C",
    };
    const saved = Object.fromEntries(Object.keys(planted).map((key) => [key, process.env[key]]));
    Object.assign(process.env, planted);
    try {
      const output = expectOk(await runTool(shellTool, workspace, { command: "env" }));
      expect(output).not.toMatch(/OPENAI_API_KEY|sk-test-secret|AGENT_API_KEYS|agent-key-1|DATABASE_PATH/);
      expect(output).toMatch(/^PATH=/m);
      expect(output).toMatch(/^LC_ALL=C$/m);
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it("kills the whole process group on timeout (SHELL_TIMEOUT), leaving no process running", async () => {
    const { workspace } = await makeSandbox();
    const started = Date.now();
    const outcome = await runTool(shellTool, workspace, { command: SPAWN_FAMILY, timeoutMs: 500 });
    expect(expectError(outcome, ToolErrorCode.shellTimeout)).toMatch(/timed out after 500 ms.*terminated \(SIGTERM\)/);
    expect(outcome).toMatchObject({ retryable: true });
    expect(Date.now() - started).toBeLessThan(3000);
    for (const pid of await familyPids(workspace)) expect(isRunning(pid)).toBe(false);
  });

  it("kills the whole process group on abort (SHELL_ABORTED), leaving no process running", async () => {
    const { workspace } = await makeSandbox();
    const controller = new AbortController();
    const pending = runTool(shellTool, workspace, { command: SPAWN_FAMILY }, controller.signal);
    const pids = await familyPids(workspace);
    for (const pid of pids) expect(isRunning(pid)).toBe(true);
    controller.abort();
    const outcome = await pending;
    expect(expectError(outcome, ToolErrorCode.shellAborted)).toMatch(/cancelled/);
    expect(outcome).toMatchObject({ retryable: false });
    for (const pid of pids) expect(isRunning(pid)).toBe(false);
  });

  it("escalates to SIGKILL after the grace period when the processes ignore SIGTERM", async () => {
    const { workspace } = await makeSandbox();
    const tool = createShellTool({ killGraceMs: 200 });
    const controller = new AbortController();
    const pending = runTool(tool, workspace, { command: `trap '' TERM; ${SPAWN_FAMILY}` }, controller.signal);
    const pids = await familyPids(workspace);
    controller.abort();
    expect(expectError(await pending, ToolErrorCode.shellAborted)).toMatch(
      /SIGKILL, still running 200 ms after SIGTERM/,
    );
    for (const pid of pids) expect(isRunning(pid)).toBe(false);
  });

  it("does not start the command when the run is already cancelled", async () => {
    const { workspace } = await makeSandbox();
    const controller = new AbortController();
    controller.abort();
    const outcome = await runTool(shellTool, workspace, { command: "touch ran" }, controller.signal);
    expect(expectError(outcome, ToolErrorCode.shellAborted)).toMatch(/before the command started/);
    expect(existsSync(join(workspace, "ran"))).toBe(false);
  });

  it("caps 50 MB of output to its head and tail with a note saying how much was cut", async () => {
    const { workspace } = await makeSandbox();
    const outcome = await runTool(shellTool, workspace, {
      command: "head -c 50000000 /dev/zero | tr '\\0' a; echo; echo THE-END",
    });
    const output = expectOk(outcome);
    const kept = SHELL_OUTPUT_HEAD_BYTES + SHELL_OUTPUT_TAIL_BYTES;
    expect(output.length).toBeLessThan(kept + 300);
    expect(output).toContain(`output cut: ${50_000_009 - kept} bytes omitted from the middle (of 50000009 in all)`);
    expect(output).toMatch(/^a{8192}\n\[\.\.\. output cut/);
    expect(output).toMatch(/a\nTHE-END\n\[exit code 0\]$/);
    expect(outcome).toMatchObject({ truncated: true });
  });

  it("returns when the shell exits, and stops what it left running in the background", async () => {
    const { workspace } = await makeSandbox();
    const started = Date.now();
    const outcome = await runTool(shellTool, workspace, {
      command: "sleep 30 & echo $! > bg.pid; (sleep 30 > /dev/null 2>&1 &); echo started",
    });
    const bg = Number(await waitForFile(join(workspace, "bg.pid")));
    strays.push(bg);
    expect(expectOk(outcome)).toMatch(
      /^started\n\[exit code 0\]\n\[the command left processes running in the background; they were stopped/,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await isRunning(bg)).toBe(false);
  });

  it("reports a command killed by a signal as SHELL_FAILED", async () => {
    const { workspace } = await makeSandbox();
    expect(
      expectError(await runTool(shellTool, workspace, { command: "kill -KILL $$" }), ToolErrorCode.shellFailed),
    ).toBe("(no output)\n[killed by signal SIGKILL]");
  });

  it("refuses a command containing a NUL byte as SHELL_FAILED instead of throwing", async () => {
    const { workspace } = await makeSandbox();
    expectError(await runTool(shellTool, workspace, { command: "echo a\0b" }), ToolErrorCode.shellFailed);
  });

  it("bounds timeoutMs at the schema: a positive integer up to 10 minutes", () => {
    const parse = (timeoutMs: unknown) => shellTool.inputSchema.safeParse({ command: "true", timeoutMs }).success;
    expect([parse(0), parse(-1), parse(1.5), parse(SHELL_MAX_TIMEOUT_MS + 1)]).toEqual([false, false, false, false]);
    expect([parse(1), parse(SHELL_MAX_TIMEOUT_MS)]).toEqual([true, true]);
  });

  it("reports a sandbox program that is gone as not started (SHELL_FAILED), not as the command's exit", async () => {
    const { workspace } = await makeSandbox();
    const gone = "/nonexistent/bwrap";
    const tool = createShellTool({
      sandbox: {
        kind: "bwrap",
        bwrap: gone,
        network: false,
        tmpBytes: 1 << 20,
        maxProcesses: 1024,
        options: { disableUserns: false },
      },
    });
    const outcome = await runTool(tool, workspace, { command: "true" });
    expect(expectError(outcome, ToolErrorCode.shellFailed)).toBe(`could not start ${gone} (ENOENT)`);
  });

  it("shows the failure text for a missing workspace", async () => {
    const { base } = await makeSandbox();
    const outcome = await runTool(shellTool, join(base, "gone"), { command: "true" });
    expect(shown(outcome)).toMatch(/workspace directory is missing/);
  });
});
