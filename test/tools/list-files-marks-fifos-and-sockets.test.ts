/**
 * list_files marks a directory with "/" and a symbolic link with "@", but showed a FIFO (named
 * pipe) or a Unix socket in the workspace as it shows a regular file: the model took it for
 * one and called read_file on it. (read_file refuses what is not a regular file without
 * blocking: it opens with O_NONBLOCK and checks what it opened.)
 *
 * Expected: list_files marks a FIFO with "|" and a socket with "=" (as `ls -F` does), and a
 * regular file whose name ends in one of those marks is shown quoted, as one ending in "@" is;
 * read_file on either answers NOT_A_FILE, naming what it is, at once.
 */
import { execFileSync } from "node:child_process";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { listFilesTool } from "../../src/tools/list-files.js";
import { readFileTool } from "../../src/tools/read-file.js";
import { expectError, expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

let server: Server | null = null;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

async function listenOn(path: string): Promise<void> {
  server = createServer();
  await new Promise<void>((resolve, reject) => {
    server?.once("error", reject);
    server?.listen(path, resolve);
  });
}

it("list_files marks a FIFO with | and a socket with =, and quotes a file whose name ends so", async () => {
  const { workspace } = await makeSandbox();
  await writeTree(workspace, { "a.txt": "x", "dir/pipe|": "x", "dir/b=": "x" });
  execFileSync("mkfifo", [join(workspace, "pipe")]);
  await listenOn(join(workspace, "sock"));
  execFileSync("mkfifo", [join(workspace, "dir", "inner")]);
  expect(expectOk(await runTool(listFilesTool, workspace, {})).split("\n")).toEqual([
    "a.txt",
    "dir/",
    '"dir/b="',
    "dir/inner|",
    '"dir/pipe|"',
    "pipe|",
    "sock=",
  ]);
});

it("read_file answers NOT_A_FILE at once for a FIFO and a socket", async () => {
  const { workspace } = await makeSandbox();
  execFileSync("mkfifo", [join(workspace, "pipe")]);
  await listenOn(join(workspace, "sock"));
  expect(expectError(await runTool(readFileTool, workspace, { path: "pipe" }), ToolErrorCode.notAFile)).toMatch(
    /"pipe" is a FIFO \(named pipe\), not a regular file/,
  );
  expect(expectError(await runTool(readFileTool, workspace, { path: "sock" }), ToolErrorCode.notAFile)).toMatch(
    /"sock" is a socket, not a regular file/,
  );
});
