import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { processGroupAlive } from "../../src/tools/process-group.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { dist } from "../helpers/file-limit-child.js";
import { hostPids } from "../helpers/processes.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * A server killed with kill -9 at the very moment a shell command starts: the command must
 * not outlive it, however early the kill lands (a command running before its watchdog exists
 * would be left running for ever).
 */

let upstream: FakeUpstream;
let dir: ReturnType<typeof tempDir> | null = null;
const processes: ChildProcess[] = [];
const servers: ChildServer[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream.close();
});
afterEach(async () => {
  for (const child of processes.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const server of servers.splice(0)) {
    if (server.process.exitCode === null && server.process.signalCode === null) server.process.kill("SIGKILL");
    await server.exited;
  }
  dir?.cleanup();
  dir = null;
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Kills are racy by nature: each try is a fresh server, killed as its command starts. */
const TRIES = 6;

describe("kill -9 the moment a shell command starts (SHELL_SANDBOX=off)", () => {
  it("the command never outlives the server", async () => {
    for (let i = 0; i < TRIES; i++) {
      dir?.cleanup();
      dir = tempDir();
      // The command's first act opens this FIFO; the killer, a shell blocked opening its other
      // end, wakes at that moment and kills the server.
      const started = join(dir.path, "started");
      execFileSync("mkfifo", [started]);
      const server = await startChildServer({
        dir: dir.path,
        upstreamURL: upstream.baseURL,
        env: { SHELL_SANDBOX: "off" },
      });
      servers.push(server);
      const killer = spawn("/bin/sh", ["-c", ': < "$0"; kill -s KILL "$1"', started, String(server.pid)], {
        stdio: "ignore",
      });
      processes.push(killer);
      const sleep = `sleep 41.${process.pid}${i}`;
      upstream.enqueue({
        toolCalls: [
          { id: "call_k", name: "shell", arguments: JSON.stringify({ command: `: > '${started}'; ${sleep}` }) },
        ],
      });
      const session = await api(server.url, "POST", "/sessions", { approval: { tools: { shell: "allow" } } });
      expect((await api(server.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" })).status).toBe(201);
      expect(await server.exited).toBe("SIGKILL");

      const argv = new RegExp(`^${sleep.replace(".", "\\.")}$`);
      const deadline = Date.now() + 5000;
      while (hostPids(argv).length > 0 && Date.now() < deadline) await pause(20);
      const alive = hostPids(argv);
      for (const pid of alive) process.kill(pid, "SIGKILL");
      expect(alive, `try ${i + 1}: the command outlived the server`).toEqual([]);
    }
  }, 60_000);

  it("a command whose server dies before starting it never runs", async () => {
    dir = tempDir();
    const marker = join(dir.path, "ran");
    // A stand-in for the server: launches the command the shell tool's way, then is killed
    // before it lets the command start.
    const script = `
      import { spawn } from "node:child_process";
      import { gatedLaunch } from ${dist("src/tools/group-watchdog.js")};
      const launch = gatedLaunch("/bin/sh", ["-c", ': > "$0"', process.argv[1]]);
      const child = spawn(launch.file, launch.args, { detached: true, stdio: ["pipe", "ignore", "ignore"] });
      process.stdout.write(child.pid + "\\n", () => process.kill(process.pid, "SIGKILL"));
    `;
    const run = promisify(execFile)(process.execPath, ["--input-type=module", "-e", script, marker]);
    const { stdout } = await run.catch((err: { stdout: string; signal: string }) => {
      expect(err.signal).toBe("SIGKILL");
      return err;
    });
    const pid = Number(stdout.trim());
    expect(pid).toBeGreaterThan(0);
    const deadline = Date.now() + 5000;
    while ((await processGroupAlive(pid)) && Date.now() < deadline) await pause(20);
    expect(await processGroupAlive(pid)).toBe(false);
    expect(existsSync(marker)).toBe(false);
  });
});
