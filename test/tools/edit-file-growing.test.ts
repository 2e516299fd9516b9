import { type ChildProcess, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EDIT_MAX_FILE_BYTES, editFileTool } from "../../src/tools/edit-file.js";
import { makeSandbox, runTool } from "./helpers.js";

/**
 * The attacker: a command in a workspace two sessions share (or one still running) flips a
 * file between 1 byte and 300 MiB (sparse: no disk) as fast as it can, while edit_file works on
 * it. edit_file checks the size (at most EDIT_MAX_FILE_BYTES) once; what it then reads must
 * stay within that, whatever size the file has by then (Node's readFile reads the size it finds,
 * up to 2 GiB: 300 MiB a call, over 1 GB of buffers at once, before). Its text never matches,
 * so no edit replaces the file the command holds open.
 */
const FLIP = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
print("flipping", flush=True)
while True:
    os.ftruncate(fd, 1)
    os.ftruncate(fd, 300 * 1024 * 1024)
`;

let flipper: ChildProcess | undefined;
afterEach(() => {
  flipper?.kill("SIGKILL");
});

describe("edit_file on a file that grows after its size was checked", () => {
  it("never reads more than the size it checked: the server's buffers stay within the limit", async () => {
    const { workspace } = await makeSandbox();
    const file = join(workspace, "flip.txt");
    await writeFile(file, "x");
    flipper = spawn("python3", ["-c", FLIP, file], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise((resolve) => flipper?.stdout?.once("data", resolve));
    const base = process.memoryUsage().arrayBuffers;
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
    }, 1);
    const outcomes = new Map<string, number>();
    const deadline = Date.now() + 3000;
    try {
      while (Date.now() < deadline) {
        const outcome = await runTool(editFileTool, workspace, {
          path: "flip.txt",
          oldText: "never there",
          newText: "y",
        });
        const kind = outcome.ok ? "ok" : outcome.errorCode;
        outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);
      }
    } finally {
      clearInterval(sampler);
    }
    console.log(`edit_file outcomes ${JSON.stringify([...outcomes])}; peak buffers +${Math.round(peak / 1e6)} MB`);
    expect([...outcomes.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(10);
    expect(peak).toBeLessThan(4 * EDIT_MAX_FILE_BYTES);
  }, 30_000);
});
