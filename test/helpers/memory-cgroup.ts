import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

/**
 * A memory cgroup (version 1, the memory controller's own hierarchy) made below this
 * process's own, with a limit on what is charged to it: the kernel's OOM killer acts inside
 * it as it would on a host out of memory, choosing among its processes only. Null with the
 * reason when this machine does not let the tests make one (not root, no such hierarchy).
 */
export interface MemoryCgroup {
  path: string;
  /** Moves process `pid` into the cgroup; what it starts afterwards is in it too. */
  add(pid: number): void;
  /** How many processes the OOM killer has killed in it. */
  oomKills(): number;
  /** Moves what is left in the cgroup back to this process's cgroup and removes it. */
  remove(): Promise<void>;
}

const V1_MEMORY = "/sys/fs/cgroup/memory";

/** This process's cgroup in the v1 memory hierarchy, or null. */
function ownMemoryCgroup(): string | null {
  for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const [, controllers, path] = line.split(":");
    if (controllers?.split(",").includes("memory") && path !== undefined) return join(V1_MEMORY, path);
  }
  return null;
}

export function makeMemoryCgroup(limitBytes: number): MemoryCgroup | { unavailable: string } {
  const parent = ownMemoryCgroup();
  if (!parent || !existsSync(join(parent, "memory.limit_in_bytes"))) {
    return { unavailable: "no cgroup v1 memory hierarchy for this process" };
  }
  const path = join(parent, `agent-test-${process.pid}-${Date.now()}`);
  try {
    mkdirSync(path);
  } catch (err) {
    return { unavailable: `cannot make a memory cgroup: ${(err as Error).message}` };
  }
  writeFileSync(join(path, "memory.limit_in_bytes"), String(limitBytes));
  const procs = () => readFileSync(join(path, "cgroup.procs"), "utf8").trim();
  return {
    path,
    add(pid) {
      writeFileSync(join(path, "cgroup.procs"), String(pid));
    },
    oomKills() {
      const kills = /^oom_kill (\d+)$/m.exec(readFileSync(join(path, "memory.oom_control"), "utf8"));
      if (!kills) throw new Error("this kernel's memory.oom_control does not count OOM kills");
      return Number(kills[1]);
    },
    async remove() {
      // A process may still be exiting; the kernel refuses to remove a cgroup with any in it.
      for (let i = 0; i < 500; i++) {
        for (const pid of procs().split("\n").filter(Boolean)) {
          try {
            writeFileSync(join(parent, "cgroup.procs"), pid);
          } catch {
            // gone meanwhile
          }
        }
        try {
          rmdirSync(path);
          return;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EBUSY") throw err;
        }
        await delay(20);
      }
      rmdirSync(path);
    },
  };
}
