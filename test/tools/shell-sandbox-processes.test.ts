import { spawn } from "node:child_process";
import { chmodSync, chownSync, closeSync, constants, openSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { bwrapArgs, resolveShellSandbox } from "../../src/tools/sandbox.js";
import { createShellTool } from "../../src/tools/shell.js";
import { hostPids } from "../helpers/processes.js";
import { expectOk, makeSandbox, runTool } from "./helpers.js";

/**
 * A sandboxed command that starts process after process, as a fork bomb would (bounded here,
 * should the limit not hold), run the way a server that is not root runs it (our image runs
 * as `node`): bwrap started as the user nobody with the shell tool's arguments. The sandbox
 * may have at most MAX processes; the kernel exempts root from that limit, so the test needs
 * a user that is not root (CI runs as root, and root may start processes as any user).
 */
const NOBODY = 65534;
const MAX = 32;
const TRIES = 200;
/** A sleep no other test runs, to count this command's processes from the host. */
const SLEEP = "20.217";
const spawned: { kill(signal: NodeJS.Signals): boolean }[] = [];
afterEach(() => {
  for (const child of spawned.splice(0)) child.kill("SIGKILL");
});

const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)("the sandbox's processes (SHELL_MAX_PROCESSES), the server not root", () => {
  it(`a command starting ${TRIES} processes gets at most ${MAX}; the rest fail with Cannot fork`, async () => {
    const { base, workspace } = await makeSandbox();
    chmodSync(base, 0o755);
    chownSync(workspace, NOBODY, NOBODY);
    const resolved = resolveShellSandbox({
      mode: "bwrap",
      network: false,
      tmpBytes: 1 << 20,
      maxProcesses: MAX,
      directory: workspace,
    });
    if (!resolved.ok || resolved.sandbox.kind !== "bwrap") throw new Error("bwrap must work for these tests");
    // The loop in a subshell, which dies at its first refused fork; the command's own shell
    // then becomes a sleep (no fork) so the sandbox lives while its processes are counted.
    const command = `(i=0; while [ $i -lt ${TRIES} ]; do sleep ${SLEEP} & i=$((i+1)); done; echo all-started); exec sleep 10`;
    const fd = openSync(workspace, constants.O_RDONLY | constants.O_DIRECTORY);
    const child = spawn(
      resolved.sandbox.bwrap,
      bwrapArgs({ ...resolved.sandbox, workspace, readOnly: false, command }),
      { uid: NOBODY, gid: NOBODY, stdio: ["ignore", "pipe", "pipe", fd], env: { PATH: "/usr/bin:/bin" } },
    );
    spawned.push(child);
    closeSync(fd);
    let output = "";
    for (const stream of [child.stdout, child.stderr]) {
      stream?.on("data", (chunk) => {
        output += chunk;
      });
    }
    const sleeps = () => hostPids(new RegExp(`^sleep ${SLEEP.replace(".", "\\.")}$`)).length;
    // Until the loop ended, one way or the other.
    for (let i = 0; i < 200 && !/Cannot fork|all-started/.test(output) && sleeps() < TRIES; i++) await delay(20);
    await delay(200);
    expect(sleeps(), output).toBeLessThanOrEqual(MAX);
    expect(sleeps(), output).toBeGreaterThan(MAX / 2);
    expect(output).toMatch(/Cannot fork/);
    expect(output).not.toMatch(/all-started/);
  });
});

describe("the sandbox's first shell", () => {
  it("runs the command as /bin/sh -c would, with the process limit set", async () => {
    const { workspace } = await makeSandbox();
    const resolved = resolveShellSandbox({
      mode: "bwrap",
      network: false,
      tmpBytes: 1 << 20,
      maxProcesses: 77,
      directory: workspace,
    });
    if (!resolved.ok || resolved.sandbox.kind !== "bwrap") throw new Error("bwrap must work for these tests");
    const tool = createShellTool({ sandbox: resolved.sandbox });
    const output = expectOk(await runTool(tool, workspace, { command: 'echo "$0" $# "$1"; ulimit -p' }));
    expect(output).toBe("/bin/sh 0 \n77\n[exit code 0]");
  });
});
