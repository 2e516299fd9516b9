import { execFile } from "node:child_process";
import { chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, symlinkSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { MAX_HELD_DIRS, removeTree } from "../../src/tools/tree-removal.js";
import { dist, runUnderFileLimit } from "../helpers/file-limit-child.js";
import { tempDir } from "../helpers/temp-dir.js";
import { makeSandbox } from "./helpers.js";

const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY;

/**
 * Nests `depth` directories named `name(i)` under `dir`, each made inside the one above it
 * through its descriptor (no path grows), and calls `atEach` with each one's descriptor path.
 */
function nest({
  dir,
  depth,
  name,
  atEach = () => {},
}: {
  dir: string;
  depth: number;
  name: (level: number) => string;
  atEach?: (fdPath: string, level: number) => void;
}): void {
  let fd = openSync(dir, O_DIR);
  for (let level = 0; level < depth; level++) {
    mkdirSync(`/proc/self/fd/${fd}/${name(level)}`);
    const next = openSync(`/proc/self/fd/${fd}/${name(level)}`, O_DIR);
    closeSync(fd);
    fd = next;
    atEach(`/proc/self/fd/${fd}`, level);
  }
  closeSync(fd);
}

const REMOVE_SCRIPT = `
  import { readdirSync } from "node:fs";
  import { removeTree } from ${dist("src/tools/tree-removal.js")};
  const [parent, name, unreadable] = process.argv.slice(2);
  let refused = null;
  if (unreadable) {
    try { readdirSync(unreadable); } catch (err) { refused = err.code; }
  }
  const removed = await removeTree({ parent, name });
  process.stdout.write(JSON.stringify({ removed, refused }));
`;

describe.skipIf(!existsSync("/proc/self/fd"))("removeTree", () => {
  it("removes a tree deeper than PATH_MAX and than the descriptors it may hold, following no symlink", async () => {
    const { base, workspace, outside } = await makeSandbox();
    writeFileSync(join(outside, "precious.txt"), "keep me");
    // 400 levels of 30-character names (a 12,000-character path) in a child limited to 64
    // descriptors: a walk holding one per level would run out.
    nest({
      dir: workspace,
      depth: 400,
      name: (level) => `d${String(level).padStart(29, "0")}`,
      atEach: (here, level) => {
        if (level % 50 !== 0) return;
        writeFileSync(join(here, "secret.env"), "AWS_SECRET=x");
        symlinkSync(outside, join(here, "out-dir"));
        symlinkSync(join(outside, "precious.txt"), join(here, "out-file"));
      },
    });
    const answer = JSON.parse(await runUnderFileLimit(REMOVE_SCRIPT, [base, "workspace"]));
    expect(answer.removed).toBe(true);
    expect(existsSync(workspace)).toBe(false);
    expect(await readFile(join(outside, "precious.txt"), "utf8")).toBe("keep me");
    expect(MAX_HELD_DIRS).toBeLessThan(64);
  });

  it("answers false for an entry that is not there, and unlinks a symlink at the name without following it", async () => {
    const { base, outside } = await makeSandbox();
    writeFileSync(join(outside, "precious.txt"), "keep me");
    expect(await removeTree({ parent: base, name: "missing" })).toBe(false);
    symlinkSync(outside, join(base, "link"));
    expect(await removeTree({ parent: base, name: "link" })).toBe(true);
    expect(existsSync(join(base, "link"))).toBe(false);
    expect(await readFile(join(outside, "precious.txt"), "utf8")).toBe("keep me");
  });

  /**
   * A tree whose command took its own permissions away (`chmod 000`), removed as a server that
   * is not root (the image runs as `node`) removes it: modes bind the process. As root, the
   * child runs without the capabilities that bypass them (setpriv drops them from its bounding
   * set), so it is held to the modes as the tree's owner would be; the child checks that
   * first (a plain read of the 000 directory is refused), so the test cannot pass vacuously.
   */
  it("removes directories whose modes deny their owner reading, searching and writing", async () => {
    const asRoot = process.getuid?.() === 0;
    const { base, workspace } = await makeSandbox();
    const locked = join(workspace, "locked");
    mkdirSync(join(locked, "inner"), { recursive: true });
    writeFileSync(join(locked, "inner", "f"), "x");
    writeFileSync(join(locked, "g"), "x");
    mkdirSync(join(workspace, "readonly"));
    writeFileSync(join(workspace, "readonly", "h"), "x");
    chmodSync(join(locked, "inner"), 0o000);
    chmodSync(locked, 0o000);
    chmodSync(join(workspace, "readonly"), 0o500);
    chmodSync(workspace, 0o100);
    const dir = tempDir("tree-removal-child-");
    try {
      const file = join(dir.path, "child.mjs");
      writeFileSync(file, REMOVE_SCRIPT);
      const args = [process.execPath, file, base, "workspace", locked];
      const [command, ...rest] = asRoot
        ? ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--", ...args]
        : args;
      const { stdout } = await promisify(execFile)(command as string, rest, { encoding: "utf8" });
      expect(JSON.parse(stdout)).toEqual({ removed: true, refused: "EACCES" });
      expect(existsSync(workspace)).toBe(false);
    } finally {
      if (existsSync(workspace)) {
        for (const path of [workspace, locked, join(locked, "inner"), join(workspace, "readonly")]) {
          chmodSync(path, 0o700);
        }
      }
      dir.cleanup();
    }
  });
});
