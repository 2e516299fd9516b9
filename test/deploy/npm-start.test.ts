import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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

// start.mjs found the checkout with `new URL("..", import.meta.url).pathname`, which is
// percent-encoded: under a path with a space it read `My%20Projects/.../package.json` and died
// with ENOENT before serving. It now turns its URL into a file path (fileURLToPath).
it("npm start runs the built server from a checkout whose path has a space in it", () => {
  const dir = tempDir();
  try {
    // The parts of a checkout start.mjs reads: package.json, scripts/, and a built dist/ (here a
    // stand-in server that says it started; no sources, so nothing is stale and nothing is built).
    const app = join(dir.path, "My Projects", "agent-server");
    mkdirSync(join(app, "scripts"), { recursive: true });
    mkdirSync(join(app, "dist", "src"), { recursive: true });
    for (const file of ["start.mjs", "node-version.mjs"]) {
      copyFileSync(join(root, "scripts", file), join(app, "scripts", file));
    }
    copyFileSync(join(root, "package.json"), join(app, "package.json"));
    writeFileSync(join(app, "dist", "src", "server.js"), 'console.log("the server started");\n');

    const result = spawnSync(process.execPath, [join(app, "scripts", "start.mjs")], {
      cwd: app,
      encoding: "utf8",
      timeout: 15_000,
    });
    const firstError = (result.stderr.split("\n").find((l) => /Error|error/.test(l)) ?? "").trim();
    expect({ status: result.status, stdout: result.stdout.trim(), error: firstError }).toEqual({
      status: 0,
      stdout: "the server started",
      error: "",
    });
  } finally {
    dir.cleanup();
  }
});
