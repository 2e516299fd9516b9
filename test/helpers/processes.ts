import { readdirSync, readFileSync } from "node:fs";

/**
 * Host pids of the running (not zombie) processes whose whole command line, arguments joined
 * by spaces, matches `argv`. Finds processes by what they run, so it works for commands in a
 * sandbox too (the pids they see are their pid namespace's).
 */
export function hostPids(argv: RegExp): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command line first: most processes do not match, and need no second read.
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").replace(/\0$/, "").split("\0").join(" ");
      if (!argv.test(cmdline)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2)[0] === "Z") continue;
      pids.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}
