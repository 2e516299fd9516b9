import { z } from "zod";
import { stopCause, type ToolOutcome, toolError, toolOk } from "../agent/tool.js";
import { isOutOfDescriptors } from "../errno.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { ToolErrorCode } from "./error-codes.js";
import { outOfDescriptorsOutcome } from "./fs-errors.js";
import { closeDir } from "./open-dir.js";
import { bwrapArgs, type ShellSandbox, UNSANDBOXED } from "./sandbox.js";
import { runShellCommand, type ShellRun } from "./shell-process.js";
import { formatBytes } from "./text.js";
import { openWorkspaceRoot } from "./workspace.js";

/** The system's limit on one argument of a program (MAX_ARG_STRLEN: 32 pages), the command's terminating NUL included. */
export const MAX_COMMAND_BYTES = 128 * 1024;
export const SHELL_DEFAULT_TIMEOUT_MS = 30_000;
export const SHELL_MAX_TIMEOUT_MS = 10 * 60_000;
/** Between SIGTERM and SIGKILL when a command's process group is stopped. */
export const SHELL_KILL_GRACE_MS = 2000;
/** After the shell exits, how long background processes may keep its output open before we stop reading. */
export const SHELL_DRAIN_MS = 500;
/** Output kept: the first and the last bytes; the middle of longer output is cut. */
export const SHELL_OUTPUT_HEAD_BYTES = 8 * 1024;
export const SHELL_OUTPUT_TAIL_BYTES = 24 * 1024;

export const shellInput = z.strictObject({
  command: z.string().min(1).describe("Shell command line, run with /bin/sh -c in the workspace root directory."),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(SHELL_MAX_TIMEOUT_MS)
    .optional()
    .describe(
      `Time limit in milliseconds; the command and everything it started are killed when it passes. ` +
        `Defaults to ${SHELL_DEFAULT_TIMEOUT_MS}, at most ${SHELL_MAX_TIMEOUT_MS}.`,
    ),
});

export type ShellInput = z.infer<typeof shellInput>;

export interface ShellToolOptions {
  /** Overrides SHELL_KILL_GRACE_MS (tests use a short grace period). */
  killGraceMs?: number;
  /** Where commands run; without one, as the server's user (see ShellSandbox). */
  sandbox?: ShellSandbox;
  /**
   * The read-only shell (`shell_readonly`): the sandbox mounts the workspace read-only, so
   * no command can change it, whatever it is. Needs a bwrap sandbox.
   */
  readOnly?: boolean;
}

/** What the model is told about where its commands run. */
function whereItRuns(sandbox: ShellSandbox, readOnly: boolean): string {
  if (sandbox.kind === "none") return "";
  const network = sandbox.network ? "" : " There is no network.";
  const scratch = `/tmp is a private scratch directory of at most ${formatBytes(sandbox.tmpBytes)}, emptied after each command`;
  return readOnly
    ? ` It runs in a sandbox where the workspace is read-only (writing to it fails) and ${scratch}: ` +
        `use it to inspect (ls, cat, grep, git log, ...).${network}`
    : ` It runs in a sandbox: the workspace and /tmp are the only places it can change; ${scratch}; ` +
        `the rest of the system is read-only.${network}`;
}

/** Builds the shell tool (or, with `readOnly`, the read-only shell); `shellTool` is the unsandboxed one. */
export function createShellTool({
  killGraceMs = SHELL_KILL_GRACE_MS,
  sandbox = UNSANDBOXED,
  readOnly = false,
}: ShellToolOptions = {}): WorkspaceToolDefinition<ShellInput> {
  if (readOnly && sandbox.kind !== "bwrap") throw new Error("the read-only shell needs a bwrap sandbox");
  return {
    name: readOnly ? "shell_readonly" : "shell",
    description:
      "Run a command with /bin/sh -c in the workspace root directory, stdin closed, and return its combined " +
      "stdout and stderr followed by the exit code. A non-zero exit is reported as an error with the output. " +
      `The default time limit is ${SHELL_DEFAULT_TIMEOUT_MS / 1000} s (timeoutMs, at most ` +
      `${SHELL_MAX_TIMEOUT_MS / 60_000} min); on timeout the command and all its child processes are killed. ` +
      `Output over ${formatBytes(SHELL_OUTPUT_HEAD_BYTES + SHELL_OUTPUT_TAIL_BYTES)} keeps its first ` +
      `${formatBytes(SHELL_OUTPUT_HEAD_BYTES)} and last ${formatBytes(SHELL_OUTPUT_TAIL_BYTES)}. Commands do not ` +
      "share state between calls (each is a fresh shell); the environment holds only basic variables (PATH, HOME, " +
      "LANG, …). Not interactive: pass flags such as -y instead of waiting for input." +
      whereItRuns(sandbox, readOnly),
    inputSchema: shellInput,
    readOnly,
    async execute({ command, timeoutMs = SHELL_DEFAULT_TIMEOUT_MS }, { workspace, signal }) {
      if (signal.aborted) return abortedOutcome(signal, "", false);
      if (command.includes("\0")) {
        return toolError(ToolErrorCode.shellFailed, "the command contains a NUL byte, which no shell accepts", true);
      }
      const bytes = Buffer.byteLength(command);
      if (bytes >= MAX_COMMAND_BYTES) {
        return toolError(
          ToolErrorCode.shellFailed,
          `the command is ${bytes} bytes; the system takes one of less than ${MAX_COMMAND_BYTES} (128 KiB): write a longer script to a file and run that`,
          true,
        );
      }
      // The sandbox mounts the directory opened here, checked to be the workspace.
      const opened = await openWorkspaceRoot(workspace);
      if (!opened.ok) return opened.outcome;
      const root = opened.root;
      try {
        const launch =
          sandbox.kind === "bwrap"
            ? {
                file: sandbox.bwrap,
                args: bwrapArgs({ ...sandbox, workspace, readOnly, command }),
                cwd: "/",
                fd3: root.fd,
                sandboxed: true,
              }
            : { file: "/bin/sh", args: ["-c", "--", command], cwd: workspace, sandboxed: false };
        const run = await runShellCommand({
          ...launch,
          timeoutMs,
          signal,
          killGraceMs,
          drainMs: SHELL_DRAIN_MS,
          headBytes: SHELL_OUTPUT_HEAD_BYTES,
          tailBytes: SHELL_OUTPUT_TAIL_BYTES,
        });
        return outcomeOf(run, { timeoutMs, killGraceMs, program: launch.file, signal });
      } finally {
        await closeDir(root);
      }
    },
  };
}

export const shellTool = createShellTool();

function outcomeOf(
  run: ShellRun,
  {
    timeoutMs,
    killGraceMs,
    program,
    signal,
  }: { timeoutMs: number; killGraceMs: number; program: string; signal: AbortSignal },
): ToolOutcome {
  const truncated = run.omittedBytes > 0;
  if (run.spawnError) {
    if (isOutOfDescriptors(run.spawnError)) return outOfDescriptorsOutcome(run.spawnError, `start ${program} with`);
    return toolError(ToolErrorCode.shellFailed, `could not start ${program} (${run.spawnError})`, false);
  }
  const body = run.output === "" ? "(no output)" : run.output.replace(/\n$/, "");
  if (run.stopped) {
    const how = run.stopped.atOnce
      ? "killed at once (SIGKILL, no grace)"
      : run.stopped.forced
        ? `killed (SIGKILL, still running ${killGraceMs} ms after SIGTERM)`
        : "terminated (SIGTERM)";
    if (run.stopped.by === "abort") return abortedOutcome(signal, `${body}\n`, truncated, how);
    return withTruncation(
      toolError(
        ToolErrorCode.shellTimeout,
        `${body}\n[timed out after ${timeoutMs} ms: the command and its child processes were ${how}. ` +
          "Use a larger timeoutMs or run something quicker]",
        true,
      ),
      truncated,
    );
  }
  const notes = run.backgroundStopped
    ? "\n[the command left processes running in the background; they were stopped when it exited (a command's processes end with it)]"
    : "";
  if (run.exitCode === 0) return toolOk(`${body}\n[exit code 0]${notes}`, truncated);
  const status = run.exitSignal ? `killed by signal ${run.exitSignal}` : `exit code ${run.exitCode}`;
  return withTruncation(toolError(ToolErrorCode.shellFailed, `${body}\n[${status}]${notes}`, true), truncated);
}

/** Stopped by the run's signal (`how`: how its processes were stopped; none: before it started). */
function abortedOutcome(signal: AbortSignal, output: string, truncated: boolean, how?: string): ToolOutcome {
  const why = stopCause(signal);
  const what = how
    ? `[stopped: ${why}; the command and its child processes were ${how}]`
    : `[not run: ${why} before the command started]`;
  return withTruncation(toolError(ToolErrorCode.shellAborted, `${output}${what}`, false), truncated);
}

const withTruncation = (outcome: ToolOutcome, truncated: boolean): ToolOutcome =>
  truncated ? { ...outcome, truncated } : outcome;
