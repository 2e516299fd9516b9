import { spawn } from "node:child_process";
import type { Socket } from "node:net";
import type { Writable } from "node:stream";

/**
 * How a command is started so that it never runs uncovered by its watchdog: `/bin/sh` reads
 * one line from its stdin, a pipe only this process holds, and only then execs `file` with
 * `args` in its own place (same pid, so same process group and parent) with stdin from
 * /dev/null. Before the exec it marks itself, and so everything the command will start, as
 * the first the kernel's OOM killer kills (`oom_score_adj` 1000; raising one's own needs no
 * privilege): by default it kills the process with the most memory, which is the server
 * whenever a command spreads its memory over processes smaller than it. A command may set its
 * own back down to 0 (the kernel lets any process, unless the server holds CAP_SYS_RESOURCE),
 * so this spares the server a command's accident, not a command that means it.
 *
 * Its stderr is its stdout from its first instruction on: what the launcher, `file` (bwrap's
 * own errors included) and the command write to either comes out of the one stdout pipe in
 * the order written (two pipes read by one process lose that order); the caller spawns it
 * with stderr ignored, nothing is written there.
 *
 * The caller spawns this detached, starts the group's watchdog (watchProcessGroup), and then
 * opens the gate (openGate). Should this process die before that, even by SIGKILL, the pipe
 * closes unwritten and the launcher exits without running anything: there is no moment at
 * which the command runs and this process's death would leave it running.
 */
export function gatedLaunch(file: string, args: readonly string[]): { file: string; args: string[] } {
  return {
    file: "/bin/sh",
    args: [
      "-c",
      'exec 2>&1; read -r go || exit 125; { echo 1000 >/proc/self/oom_score_adj; } 2>/dev/null; exec "$@" </dev/null',
      "sh",
      file,
      ...args,
    ],
  };
}

/** Lets a gatedLaunch's command start: writes the line it waits for and closes the pipe. */
export function openGate(stdin: Writable): void {
  // EPIPE when the launcher is already gone (killed by someone else): its exit says so.
  stdin.on("error", () => {});
  stdin.end("go\n");
}

/**
 * Ends a process group if this server process dies first, even by SIGKILL (which runs no
 * cleanup of ours): a tiny `/bin/sh`, in a session of its own, blocks reading a pipe that
 * only this process holds open, and kills the group when that pipe closes. Non-null means the
 * watchdog process exists on return (spawn returns once it has exec'd), so the group is
 * covered from then on; to cover a command from its first instruction, start it with
 * gatedLaunch and open its gate after this. `release()`, called once the group is known to
 * be gone, kills the watchdog before closing the pipe, so it never signals a group id the
 * system has since given to someone else. Null when the watchdog could not be started: the
 * command then runs, not covered against our crash.
 */
export function watchProcessGroup(pgid: number): { release(): void } | null {
  let watchdog: ReturnType<typeof spawn>;
  try {
    watchdog = spawn("/bin/sh", ["-c", 'read line; kill -s KILL -- "-$0" 2>/dev/null', String(pgid)], {
      detached: true,
      env: {},
      stdio: ["pipe", "ignore", "ignore"],
    });
  } catch {
    // (spawn throws for some errors, e.g. E2BIG or ENOMEM): the command runs unwatched.
    return null;
  }
  // Without a watchdog the command still runs; it is only not covered against our own crash.
  watchdog.on("error", () => {});
  const pipe = watchdog.stdin as Socket | null;
  pipe?.on("error", () => {});
  // No pid: the spawn failed (its 'error' comes on the next tick).
  if (watchdog.pid === undefined) {
    pipe?.destroy();
    return null;
  }
  // Neither the watchdog nor its pipe keeps this process alive.
  watchdog.unref();
  pipe?.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      watchdog.kill("SIGKILL");
      pipe?.destroy();
    },
  };
}
