import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveShellSandbox } from "../../src/tools/sandbox.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { makeSandbox } from "./helpers.js";

/**
 * The sandbox's file systems in memory, attacked as a model would without approval: through a
 * real server (SHELL_SANDBOX=bwrap, a 1 MiB SHELL_TMP_BYTES), `shell_readonly` calls that write
 * 16 MiB into each place of the sandbox a command might write. What a tmpfs holds is host
 * memory (`Shmem` in /proc/meminfo) that no process owns, so the OOM killer would kill the
 * server for it: every such place must be capped or read-only. bwrap must work here.
 */
const CAP = 1024 * 1024;
const WRITTEN_MIB = 16;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ env: { SHELL_SANDBOX: "bwrap", SHELL_TMP_BYTES: String(CAP) } });
});
afterAll(async () => {
  await server?.close();
});

/**
 * A command that writes WRITTEN_MIB MiB to `target` and prints how much the host's Shmem grew
 * meanwhile (`grew=<kB>`) and the writer's exit code. /proc/meminfo is the kernel's, not the
 * sandbox's (it is not namespaced), and the files must be measured while the command holds
 * them: its tmpfs are gone when it ends.
 */
const fill = (target: string) =>
  "shmem() { awk '/^Shmem:/ { print $2 }' /proc/meminfo; }; before=$(shmem); " +
  `head -c ${WRITTEN_MIB}M /dev/zero > ${target}; rc=$?; ` +
  'echo "grew=$(( $(shmem) - before )) rc=$rc"; exit $rc';

/** Runs one model turn of `shell_readonly` calls, one per target, and returns each target's tool result message. */
async function attack(targets: readonly string[]) {
  server.upstream.enqueue(
    {
      toolCalls: targets.map((target, i) => ({
        id: `call_fill_${i}`,
        name: "shell_readonly",
        arguments: JSON.stringify({ command: fill(target) }),
      })),
    },
    { text: "done" },
  );
  const session = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
  const run = await server.request("POST", `/sessions/${session}/runs?wait=true`, { body: { input: "fill memory" } });
  expect(run.body.run).toMatchObject({ status: "finished", stopReason: "complete" });
  const messages = (await server.request("GET", `/sessions/${session}/messages`)).body.items as {
    role: string;
    toolCallId: string;
    content: string;
    isError: boolean;
    metadata: { errorCode: string | null };
  }[];
  return targets.map((target, i) => {
    const result = messages.find((m) => m.role === "tool" && m.toolCallId === `call_fill_${i}`);
    if (!result) throw new Error(`no tool result for call_fill_${i}`);
    return { target, ...result };
  });
}

/** The Shmem growth, in bytes, that a result reports. */
const grewBytes = (content: string): number => {
  const grew = /grew=(-?\d+) rc=/.exec(content);
  if (!grew) throw new Error(`the command did not report its Shmem growth: ${content}`);
  return Number(grew[1]) * 1024;
};

describe("the sandbox's in-memory file systems (SHELL_TMP_BYTES)", () => {
  it("shell_readonly writing past the cap into /tmp or /dev/shm fails with No space left on device; Shmem grows by at most about the cap", async () => {
    for (const { target, ...result } of await attack(["/tmp/fill", "/dev/shm/fill"])) {
      expect(result.isError, `${target}: ${result.content}`).toBe(true);
      expect(result.metadata.errorCode, target).toBe("SHELL_FAILED");
      expect(result.content, target).toMatch(/No space left on device/);
      // The cap, and slack for what the rest of the host puts in shared memory meanwhile (a
      // browser test beside it: up to ~5 MiB), far from the WRITTEN_MIB an uncapped write adds.
      expect(grewBytes(result.content), `${target}: ${result.content}`).toBeLessThan(CAP + 8 * 1024 * 1024);
    }
  });

  it("shell_readonly cannot write at all into /dev or the sandbox's root, even as root; Shmem does not grow", async () => {
    for (const { target, ...result } of await attack(["/dev/fill", "/fill"])) {
      expect(result.isError, `${target}: ${result.content}`).toBe(true);
      expect(result.metadata.errorCode, target).toBe("SHELL_FAILED");
      expect(result.content, target).toMatch(/Read-only file system/);
      expect(grewBytes(result.content), `${target}: ${result.content}`).toBeLessThan(8 * 1024 * 1024);
    }
  });

  it("what fits under the cap still works: a scratch file in /tmp and a POSIX shared-memory file in /dev/shm", async () => {
    server.upstream.enqueue(
      {
        toolCalls: [
          {
            id: "call_small",
            name: "shell_readonly",
            arguments: JSON.stringify({
              command: "head -c 100000 /dev/zero > /tmp/a && head -c 100000 /dev/zero > /dev/shm/b && wc -c < /tmp/a",
            }),
          },
        ],
      },
      { text: "done" },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
    await server.request("POST", `/sessions/${session}/runs?wait=true`, { body: { input: "small files" } });
    const messages = (await server.request("GET", `/sessions/${session}/messages`)).body.items;
    expect(messages.find((m: { role: string }) => m.role === "tool")).toMatchObject({
      isError: false,
      content: "100000\n[exit code 0]",
    });
  });

  it("GET /tools tells the model the size of /tmp", async () => {
    const tools = (await server.request("GET", "/tools")).body.items as { name: string; description: string }[];
    const readonly = tools.find((t) => t.name === "shell_readonly");
    expect(readonly?.description).toContain("/tmp is a private scratch directory of at most 1.0 MiB");
  });
});

describe("a bwrap that cannot size a tmpfs (before 0.5, no --size)", () => {
  it("auto falls back to no sandbox, saying why; bwrap is a problem naming the option", async () => {
    const { base, workspace } = await makeSandbox();
    const real = resolveShellSandbox({
      mode: "bwrap",
      network: false,
      tmpBytes: CAP,
      maxProcesses: 1024,
      directory: workspace,
    });
    if (!real.ok || real.sandbox.kind !== "bwrap") throw new Error("bwrap must work for these tests");
    const bin = join(base, "bin");
    await makeOldBwrap(bin, real.sandbox.bwrap);
    const settings = { network: false, tmpBytes: CAP, maxProcesses: 1024, directory: workspace, path: bin };
    expect(resolveShellSandbox({ mode: "auto", ...settings })).toMatchObject({
      ok: true,
      sandbox: { kind: "none", reason: expect.stringContaining("Unknown option --size") },
    });
    expect(resolveShellSandbox({ mode: "bwrap", ...settings })).toMatchObject({
      ok: false,
      problem: expect.stringContaining("Unknown option --size"),
    });
  });
});

/** A `bwrap` in `dir` that refuses --size as bubblewrap before 0.5 does, and is `real` otherwise. */
async function makeOldBwrap(dir: string, real: string): Promise<void> {
  await mkdir(dir);
  const script = join(dir, "bwrap");
  await writeFile(
    script,
    '#!/bin/sh\nfor a in "$@"; do [ "$a" = --size ] && { echo "bwrap: Unknown option --size" >&2; exit 1; }; done\n' +
      `exec ${real} "$@"\n`,
  );
  await chmod(script, 0o755);
}
