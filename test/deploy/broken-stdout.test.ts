import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { freePort } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Starts the built server with stdout and stderr piped; resolves once it listens. */
async function startPiped(dir: string) {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, "dist/src/server.js")], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      PORT: String(port),
      DATABASE_PATH: join(dir, "agent.db"),
      WORKSPACE_ROOT: join(dir, "workspaces"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | string>((resolve) =>
    child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
  );
  let output = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      output += chunk;
      if (output.includes("Server listening")) resolve();
    });
    child.on("exit", () => reject(new Error(`exited before listening:\n${output}`)));
  });
  /** Closes the reading end of the log pipe, as `| head -2` does once it has its lines. */
  const breakPipe = () => {
    child.stdout.destroy();
    child.stderr.destroy();
  };
  /** SIGTERM; resolves with the exit code and how long it took (SIGKILL after 10 s). */
  const stop = async () => {
    const started = Date.now();
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return { code, ms: Date.now() - started };
  };
  return { url: `http://127.0.0.1:${port}`, breakPipe, stop };
}

it("a log reader that went away (broken stdout pipe) does not hang the shutdown", async () => {
  const dir = tempDir("broken-stdout-");
  try {
    const server = await startPiped(dir.path);
    server.breakPipe();
    // The shutdown's own log lines are the first to meet the broken pipe.
    const { code, ms } = await server.stop();
    expect(code).toBe(0);
    expect(ms).toBeLessThan(5_000);
  } finally {
    dir.cleanup();
  }
});

it("a broken stdout pipe does not stop the server answering (each request logs into it)", async () => {
  const dir = tempDir("broken-stdout-");
  try {
    const server = await startPiped(dir.path);
    server.breakPipe();
    for (let i = 0; i < 3; i++) expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await server.stop()).code).toBe(0);
  } finally {
    dir.cleanup();
  }
});
