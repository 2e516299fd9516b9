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

/** Whether /proc lists a process of group `pgid` that is not a zombie; null when /proc is unreadable. */
async function liveMemberInProc(pgid: number): Promise<boolean | null> {
  let names: string[];
  try {
    names = await readdir("/proc");
  } catch {
    return null;
  }
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
    if (Number(fields[2]) === pgid && fields[0] !== "Z") return true;
  }
  return false;
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
 * after SIGKILL, after a bounded wait), saying whether SIGKILL was sent.
 */
export async function killProcessGroup({
  pgid,
  graceMs,
}: {
  pgid: number;
  graceMs: number;
}): Promise<"terminated" | "killed"> {
  if (graceMs > 0 && !signalGroup(pgid, "SIGTERM")) return "terminated";
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
