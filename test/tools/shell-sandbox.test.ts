import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { basename, join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { resolveShellSandbox, type ShellSandbox } from "../../src/tools/sandbox.js";
import { createShellTool, MAX_COMMAND_BYTES, shellTool } from "../../src/tools/shell.js";
import { hostPids } from "../helpers/processes.js";
import { until } from "../helpers/until.js";
import { expectError, expectOk, makeSandbox, runTool, shown } from "./helpers.js";

/**
 * The shell tools under bubblewrap, attacked as an approved command would: a server layout in
 * a temp dir (the database, the workspace root with two sessions), and a process standing for
 * the server with a secret in its environment (this process's own environment was fixed at its
 * start). bwrap must work here (CI installs bubblewrap).
 */
const SECRET = "sk-sandbox-test-secret-3f9a";
const TMP_BYTES = 64 * 1024 * 1024;
let sandbox: ShellSandbox;
let layout: { workspace: string; sibling: string; database: string };
let server: ChildProcess;

beforeAll(async () => {
  const { base } = await makeSandbox({ forFile: true });
  const root = join(base, "workspaces");
  layout = { workspace: join(root, "ses_a"), sibling: join(root, "ses_b"), database: join(base, "data", "agent.db") };
  for (const dir of [layout.workspace, layout.sibling, join(base, "data")]) await mkdir(dir, { recursive: true });
  await writeFile(join(layout.sibling, "notes.txt"), "SIBLING-SESSION-DATA\n");
  await writeFile(layout.database, "SQLITE-DATABASE-CONTENT\n");
  const resolved = resolveShellSandbox({
    mode: "bwrap",
    network: false,
    tmpBytes: TMP_BYTES,
    maxProcesses: 1024,
    directory: root,
  });
  if (!resolved.ok) throw new Error(`bwrap must work for these tests (install bubblewrap): ${resolved.problem}`);
  sandbox = resolved.sandbox;
  server = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], {
    env: { OPENAI_API_KEY: SECRET },
    stdio: "ignore",
  });
});
afterAll(() => {
  server.kill("SIGKILL");
});

const shell = (options: { readOnly?: boolean; network?: boolean; killGraceMs?: number } = {}) =>
  createShellTool({
    sandbox: sandbox.kind === "bwrap" ? { ...sandbox, network: options.network ?? false } : sandbox,
    readOnly: options.readOnly,
    killGraceMs: options.killGraceMs,
  });

/** Waits until `count` processes match `argv`. */
async function untilRunning(argv: RegExp, count: number): Promise<void> {
  for (let i = 0; i < 250 && hostPids(argv).length < count; i++) await delay(20);
  expect(hostPids(argv), String(argv)).toHaveLength(count);
}

describe("the sandboxed shell", () => {
  it("cannot read the server's environment, its database or a sibling session's workspace", async () => {
    const attack = [
      `cat /proc/${server.pid}/environ /proc/${server.pid}/cmdline`,
      `cat /proc/${process.pid}/environ`,
      "cat /proc/*/environ",
      `cat ${layout.database}`,
      `cat ${join(layout.sibling, "notes.txt")}`,
      "cat ../ses_b/notes.txt",
      "env",
    ].join("; ");
    const outcome = await runTool(shell(), layout.workspace, { command: `${attack}; exit 0` });
    const output = shown(outcome);
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain("SQLITE-DATABASE-CONTENT");
    expect(output).not.toContain("SIBLING-SESSION-DATA");
    expect(output).toMatch(/No such file or directory/);
    // Of the workspace root, only its own workspace is there.
    expect(expectOk(await runTool(shell(), layout.workspace, { command: "ls -a .." }))).toBe(
      ".\n..\nses_a\n[exit code 0]",
    );
    // Its /proc shows its own processes only: the server's pid is not there (or is one of its own).
    const procs = expectOk(await runTool(shell(), layout.workspace, { command: "ls /proc | grep -c '^[0-9]'" }));
    expect(Number(procs.split("\n")[0])).toBeLessThan(10);
  });

  it("cannot reach the network (a listener on 127.0.0.1 sees no connection); SHELL_NETWORK opens it", async () => {
    let connections = 0;
    const listener: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const { port } = listener.address() as { port: number };
    const connect = `bash -c 'echo hello > /dev/tcp/127.0.0.1/${port}' && echo CONNECTED`;
    try {
      const closed = await runTool(shell(), layout.workspace, { command: connect });
      expect(closed.ok).toBe(false);
      expect(shown(closed)).not.toContain("CONNECTED");
      await delay(100);
      expect(connections).toBe(0);
      const open = await runTool(shell({ network: true }), layout.workspace, { command: connect });
      expect(expectOk(open)).toContain("CONNECTED");
      // Its connection was made before the command ended: waited for until this process has
      // accepted it (a fixed 100 ms could pass, on a stalled machine, before the accept's turn).
      await until(
        () => connections,
        (n) => n > 0,
        "the sandbox's connection to be accepted",
      );
      expect(connections).toBe(1);
    } finally {
      listener.close();
    }
  });

  it("still runs ls, cat and sh -c pipelines, and writes in its workspace (at its own path)", async () => {
    const { workspace } = await makeSandbox();
    await writeFile(join(workspace, "in.txt"), "alpha\nbeta\n");
    const outcome = await runTool(shell(), workspace, {
      command:
        "pwd; ls; cat in.txt | tr a-z A-Z | sort -r; sh -c 'echo nested | wc -c'; echo made > out.txt; echo tmp > /tmp/t && cat /tmp/t",
    });
    expect(expectOk(outcome)).toBe(`${workspace}\nin.txt\nBETA\nALPHA\n7\ntmp\n[exit code 0]`);
    expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("made\n");
    // The system is read-only, even for a command running as root in its namespace.
    const system = await runTool(shell(), workspace, { command: "touch /usr/pwned /etc/pwned" });
    expect(shown(system)).toMatch(/Read-only file system|Permission denied|No such file/);
    expect(existsSync("/usr/pwned")).toBe(false);
  });

  it("the read-only shell reads the workspace but cannot change it: the mount refuses", async () => {
    const { workspace } = await makeSandbox();
    await writeFile(join(workspace, "keep.txt"), "original\n");
    const tool = shell({ readOnly: true });
    expect(tool).toMatchObject({ name: "shell_readonly", readOnly: true });
    expect(expectOk(await runTool(tool, workspace, { command: "cat keep.txt; ls" }))).toBe(
      "original\nkeep.txt\n[exit code 0]",
    );
    for (const command of ["echo changed > keep.txt", "touch new.txt", "rm keep.txt", "mkdir d", "mv keep.txt k2"]) {
      const outcome = await runTool(tool, workspace, { command });
      expect(expectError(outcome, ToolErrorCode.shellFailed), command).toMatch(/Read-only file system/);
    }
    expect(readdirSync(workspace)).toEqual(["keep.txt"]);
    expect(await readFile(join(workspace, "keep.txt"), "utf8")).toBe("original\n");
  });

  it("a timeout kills every process of the command, in the background or in a new session", async () => {
    const { workspace } = await makeSandbox();
    const pending = runTool(shell(), workspace, {
      command: "sleep 30.101 & setsid sleep 30.102 & sleep 30.103",
      timeoutMs: 1500,
    });
    await untilRunning(/^sleep 30\.10\d$/, 3);
    expectError(await pending, ToolErrorCode.shellTimeout);
    expect(hostPids(/^sleep 30\.10\d$/)).toEqual([]);
  });

  it("a cancel kills a command that ignores SIGTERM, and what a command leaves behind ends with it", async () => {
    const { workspace } = await makeSandbox();
    const controller = new AbortController();
    const pending = runTool(
      shell({ killGraceMs: 200 }),
      workspace,
      { command: "trap '' TERM; sleep 30.201 & sleep 30.202" },
      controller.signal,
    );
    await untilRunning(/^sleep 30\.20\d$/, 2);
    controller.abort();
    expectError(await pending, ToolErrorCode.shellAborted);
    expect(hostPids(/^sleep 30\.20\d$/)).toEqual([]);

    const left = await runTool(shell(), workspace, { command: "setsid sleep 30.301 > /dev/null 2>&1 & echo started" });
    expect(expectOk(left)).toMatch(/^started\n\[exit code 0\]/);
    expect(hostPids(/^sleep 30\.301$/)).toEqual([]);
  });

  it("caps its output as the unsandboxed shell does", async () => {
    const outcome = await runTool(shell(), layout.workspace, { command: "head -c 5000000 /dev/zero | tr '\\0' a" });
    expect(expectOk(outcome)).toContain("output cut");
    expect(outcome).toMatchObject({ truncated: true });
  });
});

describe("a command longer than the system takes", () => {
  it("is refused as a tool error saying so, sandboxed or not; one just under the limit runs", async () => {
    for (const tool of [shellTool, shell()]) {
      const over = await runTool(tool, layout.workspace, { command: `echo ${"a".repeat(200_000)} | wc -c` });
      expect(expectError(over, ToolErrorCode.shellFailed)).toMatch(/the command is 200013 bytes; .*128 KiB/);
      const under = `echo ${"a".repeat(MAX_COMMAND_BYTES - 20)} | wc -c`;
      expect(expectOk(await runTool(tool, layout.workspace, { command: under }))).toBe(
        `${MAX_COMMAND_BYTES - 19}\n[exit code 0]`,
      );
    }
  });
});

describe("the host's kernel settings", () => {
  // As an approved command would, with the server running as root (as in a plain `docker run`
  // of an image running as root, or here): the sandbox's root is the host's root, and writing a
  // file in /proc/sys checks no more than that. kernel.core_pattern set to `|<a program in the
  // workspace>` would have the kernel run it as the host's root at the next crash of any process.
  // The value read is written back: a write that succeeds changes nothing, and shows the hole.
  it.each([false, true])("cannot be changed from the sandbox (read-only shell: %s)", async (readOnly) => {
    const before = readFileSync("/proc/sys/kernel/core_pattern", "utf8");
    const outcome = await runTool(shell({ readOnly }), layout.workspace, {
      command: [
        'v=$(cat /proc/sys/kernel/core_pattern); printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern && echo WROTE-HOST-SETTING',
        "grep -c ' /proc/sys ro,' /proc/self/mountinfo",
        "exit 0",
      ].join("; "),
    });
    const output = shown(outcome);
    expect(output).not.toContain("WROTE-HOST-SETTING");
    expect(output).toMatch(/Read-only file system/);
    expect(readFileSync("/proc/sys/kernel/core_pattern", "utf8")).toBe(before);
  });
});

describe("choosing the sandbox (SHELL_SANDBOX)", () => {
  it("finds bwrap through a relative PATH entry and runs commands with it from any directory", async () => {
    const real = sandbox.kind === "bwrap" ? sandbox.bwrap : "";
    // A PATH entry relative to the server's directory, as an operator may have one (and not
    // one that `..` would bring back to the same place from `/`).
    const here = await mkdtemp(join(process.cwd(), ".relative-path-"));
    try {
      await mkdir(join(here, "bin"));
      await symlink(real, join(here, "bin", "bwrap"));
      const path = join(basename(here), "bin");
      const found = resolveShellSandbox({
        mode: "bwrap",
        network: false,
        tmpBytes: TMP_BYTES,
        maxProcesses: 1024,
        directory: layout.workspace,
        path,
      });
      if (!found.ok || found.sandbox.kind !== "bwrap") throw new Error(`no sandbox: ${JSON.stringify(found)}`);
      expect(found.sandbox.bwrap).toBe(join(here, "bin", "bwrap"));
      const tool = createShellTool({ sandbox: found.sandbox });
      expect(expectOk(await runTool(tool, layout.workspace, { command: "echo from-the-sandbox" }))).toBe(
        "from-the-sandbox\n[exit code 0]",
      );
    } finally {
      await rm(here, { recursive: true, force: true });
    }
  });

  it("a bwrap that made a sandbox is not tried again in this process; one that failed is, every time", async () => {
    const real = sandbox.kind === "bwrap" ? sandbox.bwrap : "";
    const here = await mkdtemp(join(process.cwd(), ".probe-count-"));
    try {
      const log = join(here, "runs.log");
      // A bwrap that logs each run, then is the real one; and one that logs and fails.
      for (const [dir, then] of [
        ["works", `exec ${real} "$@"`],
        ["fails", "echo 'bwrap: no user namespaces' >&2; exit 1"],
      ] as const) {
        await mkdir(join(here, dir));
        await writeFile(join(here, dir, "bwrap"), `#!/bin/sh\necho ${dir} >> ${log}\n${then}\n`, { mode: 0o755 });
      }
      const resolve = (dir: string, directory: string) =>
        resolveShellSandbox({
          mode: "auto",
          network: false,
          tmpBytes: TMP_BYTES,
          maxProcesses: 1024,
          directory,
          path: join(here, dir),
        });
      const runs = async () => (existsSync(log) ? (await readFile(log, "utf8")).trim().split("\n") : []);
      expect(resolve("works", layout.workspace)).toMatchObject({ ok: true, sandbox: { kind: "bwrap" } });
      expect(resolve("works", layout.sibling)).toMatchObject({ ok: true, sandbox: { kind: "bwrap" } });
      expect(await runs()).toEqual(["works"]);
      for (const directory of [layout.workspace, layout.workspace]) {
        expect(resolve("fails", directory)).toMatchObject({ ok: true, sandbox: { kind: "none" } });
      }
      // Each failing resolution tries the strict sandbox, then the one without --disable-userns.
      expect(await runs()).toEqual(["works", "fails", "fails", "fails", "fails"]);
    } finally {
      await rm(here, { recursive: true, force: true });
    }
  });

  it("auto falls back to none, with the reason, where bwrap is missing; bwrap then is a problem; off is none", () => {
    const directory = layout.workspace;
    const missing = { network: false, tmpBytes: TMP_BYTES, maxProcesses: 1024, directory, path: "/nonexistent-bin" };
    const auto = resolveShellSandbox({ mode: "auto", ...missing });
    expect(auto).toMatchObject({ ok: true, sandbox: { kind: "none", reason: expect.stringContaining("bubblewrap") } });
    expect(resolveShellSandbox({ mode: "bwrap", ...missing })).toMatchObject({
      ok: false,
      problem: expect.stringContaining("not installed"),
    });
    expect(
      resolveShellSandbox({ mode: "off", network: false, tmpBytes: TMP_BYTES, maxProcesses: 1024, directory }),
    ).toMatchObject({
      ok: true,
      sandbox: { kind: "none", reason: "SHELL_SANDBOX=off" },
    });
    expect(
      resolveShellSandbox({ mode: "auto", network: false, tmpBytes: TMP_BYTES, maxProcesses: 1024, directory }),
    ).toMatchObject({
      ok: true,
      sandbox: { kind: "bwrap" },
    });
  });
});
