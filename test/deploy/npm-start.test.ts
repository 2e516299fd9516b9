import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { freePort } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Whether a process is still running (a zombie left to a non-reaping init counts as gone). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

it("`npm start` serves, and SIGTERM sent to npm reaches the server, which shuts down (no orphan)", async () => {
  const dir = tempDir();
  const port = await freePort();
  const npm = spawn("npm", ["start"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_PATH: join(dir.path, "agent.db"),
      WORKSPACE_ROOT: join(dir.path, "ws"),
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  npm.stdout.on("data", (d) => {
    output += d;
  });
  npm.stderr.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => npm.on("exit", (code) => resolve(code)));
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`npm start did not serve:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const serverPid = Number(/"pid":(\d+)/.exec(output)?.[1]);
    expect(serverPid).toBeGreaterThan(0);
    npm.kill("SIGTERM");
    await exited;
    const gone = Date.now() + 10_000;
    while (running(serverPid) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
    expect(running(serverPid)).toBe(false);
    expect(output).toMatch(/"msg":"stopped"/);
  } finally {
    if (npm.exitCode === null) npm.kill("SIGKILL");
    dir.cleanup();
  }
}, 40_000);
