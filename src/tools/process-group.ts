import { readdir, readFile } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";
import { errnoCode } from "../errno.js";

const POLL_MS = 20;
/** After SIGKILL, how long to wait for the group to disappear before giving up waiting. */
const KILL_CONFIRM_MS = 2000;

/**
 * Sends `signal` to every process in group `pgid`; false when the group no longer exists.
 * EPERM (some member we may not signal, e.g. a setuid program) still means the group exists.
 */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    return errnoCode(err) !== "ESRCH";
  }
}

/** A process as /proc/<pid>/stat shows it. */
interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  state: string;
}

/** The processes /proc lists, one by one (those that exit meanwhile are skipped); null when /proc is unreadable. */
async function procStats(): Promise<AsyncGenerator<ProcStat> | null> {
  let names: string[];
  try {
    names = await readdir("/proc");
  } catch {
    return null;
  }
  return (async function* () {
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      let stat: string;
      try {
        stat = await readFile(`/proc/${name}/stat`, "utf8");
      } catch {
        continue; // exited meanwhile
      }
      // "<pid> (<comm>) <state> <ppid> <pgrp> …"; comm may contain spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      yield { pid: Number(name), state: fields[0] ?? "", ppid: Number(fields[1]), pgrp: Number(fields[2]) };
    }
  })();
}

/** Whether /proc lists a process of group `pgid` that is not a zombie; null when /proc is unreadable. */
async function liveMemberInProc(pgid: number): Promise<boolean | null> {
  const stats = await procStats();
  if (!stats) return null;
  for await (const stat of stats) if (stat.pgrp === pgid && stat.state !== "Z") return true;
  return false;
}

/**
 * Sends SIGTERM to the processes of a sandbox's group `pgid` that run the command: all but
 * the group's leader (bwrap) and its children (bwrap's init of the sandbox's pid namespace).
 * Those two do not pass SIGTERM on but die of it, and the namespace's processes die with them
 * at once (SIGKILL): the command would get no grace. Where /proc is unreadable, the whole
 * group gets it. False when the group no longer exists.
 */
async function terminateSandboxed(pgid: number): Promise<boolean> {
  const stats = await procStats();
  if (!stats) return signalGroup(pgid, "SIGTERM");
  for await (const stat of stats) {
    if (stat.pgrp !== pgid || stat.pid === pgid || stat.ppid === pgid) continue;
    try {
      process.kill(stat.pid, "SIGTERM");
    } catch {
      // exited meanwhile, or not ours to signal (as signalGroup's EPERM)
    }
  }
  return signalGroup(pgid, 0);
}

/**
 * Whether any process of group `pgid` is still running. Zombies do not count: an orphan
 * re-parented to an init that never reaps (common in containers) stays a zombie for ever,
 * yet has stopped running. On systems without /proc a zombie counts as alive.
 */
export async function processGroupAlive(pgid: number): Promise<boolean> {
  if (!signalGroup(pgid, 0)) return false;
  if (process.platform !== "linux") return true;
  return (await liveMemberInProc(pgid)) ?? true;
}

/**
 * Terminates a whole process group: SIGTERM, then SIGKILL if anything is still running
 * after `graceMs` (with no grace, 0, SIGKILL at once). Resolves once the group is gone (or,
 * after SIGKILL, after a bounded wait), saying whether SIGKILL was sent. A `sandboxed` group
 * is bwrap's (its leader): SIGTERM goes to the command's processes only (terminateSandboxed),
 * so "terminated" means they ended within the grace, sandboxed or not.
 */
export async function killProcessGroup({
  pgid,
  graceMs,
  sandboxed = false,
}: {
  pgid: number;
  graceMs: number;
  sandboxed?: boolean;
}): Promise<"terminated" | "killed"> {
  if (graceMs > 0) {
    const exists = sandboxed ? await terminateSandboxed(pgid) : signalGroup(pgid, "SIGTERM");
    if (!exists) return "terminated";
  }
  const graceEnd = Date.now() + graceMs;
  while (Date.now() < graceEnd) {
    if (!(await processGroupAlive(pgid))) return "terminated";
    await delay(POLL_MS);
  }
  if (graceMs > 0 && !(await processGroupAlive(pgid))) return "terminated";
  if (!signalGroup(pgid, "SIGKILL")) return "terminated";
  const confirmEnd = Date.now() + KILL_CONFIRM_MS;
  while (Date.now() < confirmEnd && (await processGroupAlive(pgid))) await delay(POLL_MS);
  return "killed";
}
