import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync } from "node:fs";
import { lstat, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { workspaceTools } from "../../src/tools/index.js";
import { makeSandbox, runTool, shown } from "./helpers.js";

/**
 * The attacker: a process that can write in the workspace swaps the directory `r` with `l`,
 * a symlink to a directory outside, with renameat2(RENAME_EXCHANGE), as fast as it can. A
 * tool that checks a path and then opens it by name follows `r` outside now and then.
 */
const SWAPPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
os.chdir(sys.argv[1])
if libc.renameat2(AT_FDCWD, b"r", AT_FDCWD, b"l", RENAME_EXCHANGE) != 0:
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
print("swapping", flush=True)
while True:
    libc.renameat2(AT_FDCWD, b"r", AT_FDCWD, b"l", RENAME_EXCHANGE)
`;

const OUTSIDE_MARK = "OUTSIDE-SECRET";
const tool = (name: string) => workspaceTools.find((t) => t.name === name)!;

let swapper: ChildProcess | null = null;
afterEach(() => {
  swapper?.kill("SIGKILL");
  swapper = null;
});

async function startSwapper(workspace: string): Promise<ChildProcess> {
  const child = spawn("python3", ["-c", SWAPPER, workspace], { stdio: ["ignore", "pipe", "inherit"] });
  swapper = child;
  const [line] = (await once(child.stdout!, "data")) as [Buffer];
  expect(line.toString()).toContain("swapping");
  return child;
}

/** What the outside directory holds: names with their contents, to compare before and after. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) out[name] = await readFile(join(dir, name), "utf8");
  return out;
}

/** The calls the race runs per tool, and how a leak of outside content shows in a result. */
const CALLS: { name: string; count: number; input: (i: number) => Record<string, unknown> }[] = [
  { name: "read_file", count: 1500, input: () => ({ path: "r/secret.txt" }) },
  { name: "list_files", count: 600, input: () => ({ path: "r" }) },
  { name: "search_files", count: 150, input: () => ({ pattern: "SECRET", path: "r" }) },
  { name: "write_file", count: 600, input: (i) => ({ path: `r/w${i % 50}.txt`, content: "written by the tool\n" }) },
  { name: "edit_file", count: 600, input: () => ({ path: "r/e.txt", oldText: "marker", newText: "marker" + "!" }) },
];

describe("the workspace boundary under a directory-for-symlink swap race", () => {
  it("no file tool reads a byte from, or writes a byte to, the outside while r and a link to outside are swapped", async () => {
    const { workspace, outside } = await makeSandbox();
    const target = join(outside, "d");
    await mkdir(target);
    await writeFile(join(target, "secret.txt"), `${OUTSIDE_MARK}\n`);
    await writeFile(join(target, "e.txt"), `${OUTSIDE_MARK} marker\n`);
    await writeFile(join(target, `${OUTSIDE_MARK}-only.txt`), `${OUTSIDE_MARK}\n`);
    await mkdir(join(workspace, "r"));
    await writeFile(join(workspace, "r/secret.txt"), "inside\n");
    await writeFile(join(workspace, "r/e.txt"), "inside marker\n");
    await symlink(target, join(workspace, "l"));
    const before = await snapshot(target);

    const openDescriptors = () => readdirSync("/proc/self/fd").length;
    const descriptorsBefore = openDescriptors();
    await startSwapper(workspace);
    const figures: Record<string, { calls: number; ok: number; leaked: number; refused: Record<string, number> }> = {};
    for (const { name, count, input } of CALLS) {
      const figure = { calls: count, ok: 0, leaked: 0, refused: {} as Record<string, number> };
      figures[name] = figure;
      for (let i = 0; i < count; i++) {
        const outcome = await runTool(tool(name), workspace, input(i));
        if (outcome.ok) figure.ok++;
        else figure.refused[outcome.errorCode] = (figure.refused[outcome.errorCode] ?? 0) + 1;
        if (shown(outcome).includes(OUTSIDE_MARK)) figure.leaked++;
      }
    }
    // The swapper is dead before anything is looked at: a swap between the two lstat calls
    // below would otherwise show neither name as the link.
    const stopped = once(swapper!, "exit");
    swapper?.kill("SIGKILL");
    await stopped;
    const after = await snapshot(target);
    const written = Object.keys(after).filter((name) => !(name in before)).length;
    const modified = Object.keys(before).filter((name) => after[name] !== before[name]).length;
    console.log(`swap race: ${JSON.stringify(figures)}; outside files created ${written}, modified ${modified}`);

    // The swap really ran: the tools succeeded some of the time and were refused the rest.
    expect(
      (await lstat(join(workspace, "l"))).isSymbolicLink() || (await lstat(join(workspace, "r"))).isSymbolicLink(),
    ).toBe(true);
    expect(figures.read_file!.ok).toBeGreaterThan(0);
    for (const [name, figure] of Object.entries(figures)) expect(figure.leaked, name).toBe(0);
    expect(after).toEqual(before);
    // Every directory and file the tools opened was closed again (the swapper's pipe aside).
    expect(openDescriptors()).toBeLessThanOrEqual(descriptorsBefore + 1);
  }, 120_000);
});
