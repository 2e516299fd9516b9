import { execFileSync } from "node:child_process";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { ToolOutcome } from "../../src/agent/tool.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { makeSandbox, runTool } from "./helpers.js";

// Removes what MAKE made, each directory opened inside its parent: its paths (~16 KB) are
// longer than PATH_MAX, which fs.rm (the sandbox's own clean-up) cannot handle.
const REMOVE = `
import os, sys
def rm(dirfd, name):
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dirfd)
    for e in os.scandir(fd):
        if e.is_dir(follow_symlinks=False): rm(fd, e.name)
        else: os.unlink(e.name, dir_fd=fd)
    os.close(fd)
    os.rmdir(name, dir_fd=dirfd)
top = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for e in os.listdir(top):
    rm(top, e)
os.close(top)
`;
// 63 nested directories with 254-character names, and 100,000 empty files with
// 250-character names at the bottom: each file's path is ~16 KB.
const MAKE = `
import os, sys
os.chdir(sys.argv[1])
for i in range(63):
    d = "d%0253d" % i
    os.mkdir(d); os.chdir(d)
for i in range(100000):
    os.close(os.open("f%0249d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
`;

describe("search_files over 100,000 files with 16 KB paths", () => {
  it("keeps the server's memory growth under 500 MB and its event loop answering within 1 s, and says the search was partial", async () => {
    const { workspace } = await makeSandbox();
    try {
      execFileSync("python3", ["-c", MAKE, workspace]);
      const before = process.memoryUsage();
      let peakRss = before.rss;
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
      }, 5);
      const lag = monitorEventLoopDelay({ resolution: 5 });
      lag.enable();
      let outcome: ToolOutcome | string;
      try {
        outcome = await runTool(searchFilesTool, workspace, { pattern: "x" });
      } catch (err) {
        outcome = `THREW: ${String(err)}`;
      }
      // A blocked event loop runs no timer, so neither the sampler nor the delay monitor sees
      // the stretch until the loop turns: sample now, and let both timers fire once more.
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      await delay(50);
      lag.disable();
      clearInterval(sampler);
      expect(peakRss - before.rss).toBeLessThan(500e6);
      expect(lag.max / 1e6).toBeLessThan(1000);
      // A tool result (not a throw) that says only part of the workspace was searched.
      expect(outcome).toMatchObject({ ok: true, truncated: true });
      expect(typeof outcome === "string" ? outcome : outcome.ok && outcome.output).toMatch(
        /^no matches in \d+ files searched\n\[truncated: only part of the workspace was searched/,
      );
    } finally {
      execFileSync("python3", ["-c", REMOVE, workspace]);
    }
  }, 120_000);
});
