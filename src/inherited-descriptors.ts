import { closeSync, readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The close-on-exec bit of a descriptor's flags as /proc/<pid>/fdinfo shows them (octal). */
const O_CLOEXEC = 0o2000000;

/**
 * Closes the descriptors this process inherited open across exec (other than stdin, stdout
 * and stderr, and Node's IPC channel), and returns what they were. Whatever a process has open
 * without close-on-exec, every process it starts inherits: a shell command, sandboxed or not,
 * would get a directory or file the server's launcher left open, and with it whatever that
 * reaches on the host. Node marks inherited descriptors close-on-exec only up to the first
 * unused number above 15; its own are all close-on-exec. Call before anything is started.
 * Linux only (reads /proc); elsewhere closes nothing.
 */
export function closeInheritedDescriptors(): { fd: number; target: string }[] {
  if (process.platform !== "linux") return [];
  const channel = Number(process.env.NODE_CHANNEL_FD ?? -1);
  const closed: { fd: number; target: string }[] = [];
  for (const name of readdirSync("/proc/self/fd")) {
    const fd = Number(name);
    if (fd <= 2 || fd === channel) continue;
    let flags: number;
    let target: string;
    try {
      const info = readFileSync(`/proc/self/fdinfo/${fd}`, "utf8");
      flags = Number.parseInt(/^flags:\s*([0-7]+)/m.exec(info)?.[1] ?? "", 8);
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // the listing's own descriptor, closed since
    }
    if (Number.isNaN(flags) || (flags & O_CLOEXEC) !== 0) continue;
    try {
      closeSync(fd);
      closed.push({ fd, target });
    } catch {
      // closed meanwhile
    }
  }
  return closed;
}
