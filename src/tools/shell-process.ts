import { spawn } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import type { Readable } from "node:stream";
import { setTimeout as delay } from "node:timers/promises";
import { stopsWithoutGrace } from "../agent/tool.js";
import { errnoCode } from "../errno.js";
import { gatedLaunch, openGate, watchProcessGroup } from "./group-watchdog.js";
import { HeadTailBuffer } from "./head-tail-buffer.js";
import { killProcessGroup, processGroupAlive } from "./process-group.js";
import { shellEnvironment } from "./shell-env.js";

export interface ShellRunOptions {
  /** The program and its arguments: `/bin/sh -c <command>`, or bwrap running it. */
  file: string;
  args: string[];
  cwd: string;
  /**
   * The program is bwrap: the group's leader and its children are the sandbox's own processes,
   * spared the SIGTERM of a stop (see killProcessGroup).
   */
  sandboxed: boolean;
  /** Handed to the program as descriptor 3 (the workspace directory bwrap mounts). */
  fd3?: number;
  timeoutMs: number;
  /** Stops the command; one firing with a StopWithoutGrace reason has its group SIGKILLed at once. */
  signal: AbortSignal;
  /** Between SIGTERM and SIGKILL when the group is stopped. */
  killGraceMs: number;
  /** After the shell exits, how long to wait for background processes to release its output pipe. */
  drainMs: number;
  headBytes: number;
  tailBytes: number;
}

export interface ShellRun {
  /** stdout and stderr in the order written (one pipe: gatedLaunch), cut to head + tail. */
  output: string;
  omittedBytes: number;
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  /**
   * Set when the host stopped the command; `forced` says SIGKILL was needed, `atOnce` that it
   * was sent with no SIGTERM first (the signal's reason left no grace).
   */
  stopped: { by: "timeout" | "abort"; forced: boolean; atOnce: boolean } | null;
  /** The shell exited while background processes still held its output open. */
  outputLeftOpen: boolean;
  /** Processes the command left running in its group were stopped after it exited. */
  backgroundStopped: boolean;
  /** The shell could not be started (system error code). */
  spawnError: string | null;
}

/** After the shell exits, how long its group may take to end by itself before what is left is stopped. */
const GROUP_SETTLE_MS = 250;

/** Whether group `pgid` is gone within `ms` (polled). */
async function groupEndsWithin(pgid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (!(await processGroupAlive(pgid))) return true;
    if (Date.now() >= end) return false;
    await delay(20);
  }
}

const notStarted = (spawnError: string): ShellRun => ({
  output: "",
  omittedBytes: 0,
  exitCode: null,
  exitSignal: null,
  stopped: null,
  outputLeftOpen: false,
  backgroundStopped: false,
  spawnError,
});

const closed = (stream: Readable): Promise<void> =>
  new Promise((resolve) => (stream.closed ? resolve() : stream.once("close", () => resolve())));

/**
 * Runs the shell (`file` with `args`) in its own process group with stdin closed and an
 * allow-listed environment. On timeout or abort the whole group is stopped (SIGTERM, SIGKILL
 * after the grace period), and so is what the command left running in the background once it
 * exited; this resolves only after the group is gone. A watchdog ends the group should this
 * process die first, and the command starts only once the watchdog is up (gatedLaunch), so
 * no kill of this process leaves it running (unless the watchdog could not be started, which
 * is warned about). Never rejects for anything the command does.
 */
export async function runShellCommand(options: ShellRunOptions): Promise<ShellRun> {
  // Started through a gate (below), a missing or unrunnable program would show only as the
  // launcher's exit 127 or 126: checked first, it is reported as not started.
  const unrunnable = await access(options.file, constants.X_OK).then(
    () => null,
    (err: unknown) => errnoCode(err) ?? "unknown error",
  );
  if (unrunnable) return notStarted(unrunnable);
  const output = new HeadTailBuffer(options.headBytes, options.tailBytes);
  const launch = gatedLaunch(options.file, options.args);
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(launch.file, launch.args, {
      cwd: options.cwd,
      env: shellEnvironment(),
      detached: true,
      // stdin is the gate; the command itself gets /dev/null. Its stderr goes down the stdout
      // pipe (gatedLaunch), so nothing is written to the ignored one.
      stdio: options.fd3 === undefined ? ["pipe", "pipe", "ignore"] : ["pipe", "pipe", "ignore", options.fd3],
    });
  } catch (err) {
    // Refused before anything started (E2BIG: arguments over the system's limits).
    return notStarted(errnoCode(err) ?? "unknown error");
  }
  // Listened to at once: a spawn that fails emits 'error' on the next tick, and one nobody
  // listens to would end this process.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | { error: unknown }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (error) => resolve({ error }));
  });
  if (!child.stdin || !child.stdout) {
    // Node gives up before making the pipes when the process has no descriptor for them
    // (EMFILE, ENFILE): nothing started.
    const exit = await exited;
    return notStarted("error" in exit ? (errnoCode(exit.error) ?? "unknown error") : "no output pipes");
  }
  // If this server dies mid-command, the command's group dies with it: a recovered run
  // records it as interrupted, and nothing of it goes on changing the workspace. The command
  // waits at its gate until the watchdog is up: killed before that, it never runs.
  const watchdog = child.pid === undefined ? null : watchProcessGroup(child.pid);
  if (child.pid !== undefined && !watchdog) {
    // Rare (the system refused a tiny process); the command still runs and is still bounded.
    process.emitWarning("could not start the shell command's watchdog", { code: "AGENT_SHELL_WATCHDOG" });
  }
  if (child.pid !== undefined) openGate(child.stdin);
  // The one pipe of stdout and stderr (stdio above, gatedLaunch).
  const stdout: Readable = child.stdout;
  stdout.on("data", (chunk: Buffer) => output.push(chunk));
  const streamsClosed = closed(stdout);

  const state: {
    stopped: { by: "timeout" | "abort"; atOnce: boolean; killing: Promise<"terminated" | "killed"> } | null;
  } = { stopped: null };
  const stop = (by: "timeout" | "abort"): void => {
    if (state.stopped || child.pid === undefined) return;
    const atOnce = by === "abort" && stopsWithoutGrace(options.signal);
    const graceMs = atOnce ? 0 : options.killGraceMs;
    state.stopped = {
      by,
      atOnce,
      killing: killProcessGroup({ pgid: child.pid, graceMs, sandboxed: options.sandboxed }),
    };
  };
  const timer = setTimeout(() => stop("timeout"), options.timeoutMs);
  const onAbort = (): void => stop("abort");
  options.signal.addEventListener("abort", onAbort, { once: true });
  if (options.signal.aborted) stop("abort");

  const exit = await exited;
  clearTimeout(timer);
  options.signal.removeEventListener("abort", onAbort);
  let forced = false;
  const { stopped } = state;
  if (stopped) forced = (await stopped.killing) === "killed";

  // The shell is gone; its output pipe closes when every process holding it is gone too.
  let drainTimer: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    streamsClosed.then(() => true),
    new Promise<false>((resolve) => {
      drainTimer = setTimeout(() => resolve(false), options.drainMs);
    }),
  ]);
  clearTimeout(drainTimer);
  if (!drained) stdout.destroy();
  // A command's processes end with it: nothing it started in the background outlives the
  // call (a run, a cancel or a deleted session could no longer reach it). A sandbox's first
  // process takes a moment to end the others after the command: that is not left behind.
  let backgroundStopped = false;
  if (!stopped && child.pid !== undefined && !(await groupEndsWithin(child.pid, GROUP_SETTLE_MS))) {
    await killProcessGroup({ pgid: child.pid, graceMs: options.killGraceMs, sandboxed: options.sandboxed });
    backgroundStopped = true;
  }

  watchdog?.release();
  const spawnError = "error" in exit ? (errnoCode(exit.error) ?? "unknown error") : null;
  return {
    output: output.text(),
    omittedBytes: output.omittedBytes,
    exitCode: "code" in exit ? exit.code : null,
    exitSignal: "signal" in exit ? exit.signal : null,
    stopped: stopped ? { by: stopped.by, forced, atOnce: stopped.atOnce } : null,
    outputLeftOpen: !drained,
    backgroundStopped,
    spawnError,
  };
}
