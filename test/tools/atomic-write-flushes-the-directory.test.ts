/**
 * write_file and edit_file replace a file by renaming a flushed temporary over it. The rename
 * is an entry of the directory: until the directory itself is flushed, a power loss or a
 * kernel crash may bring back the old file (or none), while the run's ledger, committed
 * right after, says the tool wrote it. The system calls of a real write (the built module in
 * a child process under strace) must show the directory's fsync after the rename.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { tempDir } from "../helpers/temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

it("a file written atomically is followed by an fsync of its directory, after the rename", () => {
  const temp = tempDir("atomic-write-sync-");
  cleanups.push(temp.cleanup);
  const workspace = join(temp.path, "ws");
  const script = join(temp.path, "write.mjs");
  const log = join(temp.path, "strace.log");
  writeFileSync(
    script,
    `import { mkdirSync } from "node:fs";
import { writeFileAtomic } from ${JSON.stringify(join(root, "dist/src/tools/atomic-write.js"))};
import { openDirFd, closeDir } from ${JSON.stringify(join(root, "dist/src/tools/open-dir.js"))};
mkdirSync(${JSON.stringify(workspace)});
const dir = { fd: await openDirFd(${JSON.stringify(workspace)}), path: ${JSON.stringify(workspace)} };
await writeFileAtomic({ dir, name: "notes.txt", data: "kept\\n" });
console.log(JSON.stringify({ dirFd: dir.fd }));
await closeDir(dir);
`,
  );
  const result = spawnSync(
    "strace",
    ["-f", "-qq", "-e", "trace=rename,renameat,renameat2,fsync,fdatasync", "-o", log, process.execPath, script],
    { encoding: "utf8", timeout: 30_000 },
  );
  expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: "" });
  const { dirFd } = JSON.parse(result.stdout.trim()) as { dirFd: number };
  expect(readFileSync(join(workspace, "notes.txt"), "utf8")).toBe("kept\n");

  const calls = readFileSync(log, "utf8")
    .split("\n")
    .map((line) => line.replace(/^\d+\s+/, ""));
  const renamed = calls.findIndex((call) => /^rename(at2?)?\(.*\.tmp-[0-9a-f]{12}.*notes\.txt.*= 0$/.test(call));
  expect(renamed, `no rename of the temporary in:\n${calls.join("\n")}`).toBeGreaterThanOrEqual(0);
  const dirSynced = calls.slice(renamed + 1).some((call) => new RegExp(`^fsync\\(${dirFd}\\)\\s+= 0$`).test(call));
  expect(dirSynced, `no fsync(${dirFd}) after the rename in:\n${calls.join("\n")}`).toBe(true);
});
