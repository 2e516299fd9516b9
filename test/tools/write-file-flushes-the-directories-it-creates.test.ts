/**
 * write_file creates the missing directories of its path, then writes the file atomically
 * and flushes the file's own directory. A directory it created is an entry of its parent:
 * until the parent is flushed, a power loss or a kernel crash may take the new directory, and
 * the file in it, away, while the run's ledger, committed right after, says the tool wrote
 * it. The system calls of a real write_file (the built tool in a child process under strace)
 * must show, after each directory it made, an fsync of the directory it made it in.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { tempDir } from "../helpers/temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

it("write_file flushes the parent of each directory it creates, after creating it", () => {
  const temp = tempDir("write-file-dir-sync-");
  cleanups.push(temp.cleanup);
  const workspace = join(temp.path, "ws");
  mkdirSync(workspace);
  const script = join(temp.path, "write.mjs");
  const log = join(temp.path, "strace.log");
  writeFileSync(
    script,
    `import { writeFileTool } from ${JSON.stringify(join(root, "dist/src/tools/write-file.js"))};
const outcome = await writeFileTool.execute(
  { path: "made/deeper/notes.txt", content: "kept\\n" },
  { workspace: ${JSON.stringify(workspace)}, signal: new AbortController().signal, toolCallId: "call_1" },
);
console.log(JSON.stringify(outcome));
`,
  );
  const result = spawnSync(
    "strace",
    ["-f", "-qq", "-e", "trace=mkdir,mkdirat,fsync,fdatasync", "-o", log, process.execPath, script],
    { encoding: "utf8", timeout: 30_000 },
  );
  expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: "" });
  expect(JSON.parse(result.stdout.trim())).toMatchObject({ ok: true });
  expect(readFileSync(join(workspace, "made/deeper/notes.txt"), "utf8")).toBe("kept\n");

  const calls = readFileSync(log, "utf8")
    .split("\n")
    .map((line) => line.replace(/^\d+\s+/, ""));
  // The tool makes a directory through its parent's open descriptor: /proc/self/fd/N/name.
  const made = calls.flatMap((call, index) => {
    const match = /^mkdir(?:at)?\((?:AT_FDCWD, )?"\/proc\/self\/fd\/(\d+)\/(made|deeper)".*= 0$/.exec(call);
    return match ? [{ index, parentFd: match[1], name: match[2] }] : [];
  });
  expect(
    made.map((m) => m.name),
    `the directories made, in:\n${calls.join("\n")}`,
  ).toEqual(["made", "deeper"]);
  for (const { index, parentFd, name } of made) {
    const flushed = calls
      .slice(index + 1)
      .some((call) => new RegExp(`^f(data)?sync\\(${parentFd}\\)\\s+= 0$`).test(call));
    expect(
      flushed,
      `no fsync(${parentFd}) of the directory "${name}" was made in, after it, in:\n${calls.join("\n")}`,
    ).toBe(true);
  }
});
