import { spawn } from "node:child_process";
import type { Socket } from "node:net";

/**
 * Ends a process group if this server process dies first, even by SIGKILL (which runs no
 * cleanup of ours): a tiny `/bin/sh`, in a session of its own, blocks reading a pipe that
 * only this process holds open, and kills the group when that pipe closes. `release()`,
 * called once the group is known to be gone, kills the watchdog before closing the pipe,
 * so it never signals a group id the system has since given to someone else. Null when
 * the watchdog could not be started: the command then runs, not covered against our crash.
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
