import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./child-server.js";
import { compileCacheEnv } from "./compile-cache.js";
import { tempDir } from "./temp-dir.js";

// The built server with few file descriptors, for the tests of exhaustion
// (test/deploy/exhaustion.test.ts): a few hundred sockets prove what thousands do against the
// usual limit.

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The open-file limit (soft and hard) the server runs under. */
export const FD_LIMIT = 128;
/** The API key the server accepts unless `env` says otherwise. */
export const KEY = "key-a-0123456789abcdef";

export interface LimitedServer {
  port: number;
  /** What the server wrote to stdout and stderr so far (its JSON log lines, at LOG_LEVEL warn). */
  output(): string;
}

/**
 * The built server under `ulimit -n FD_LIMIT`, with the key KEY unless `env` sets
 * AGENT_API_KEYS, two runs at once (so MAX_CONNECTIONS is 128 - 80 - 2 × 6 = 36 by default),
 * and a model upstream that refuses connections unless it sets OPENAI_BASE_URL.
 * Resolves once /healthz answers; `cleanups` gets what stops it and removes its files.
 */
export async function startLimited(env: Record<string, string>, cleanups: (() => unknown)[]): Promise<LimitedServer> {
  const temp = tempDir("exhaustion-");
  cleanups.push(temp.cleanup);
  const port = await freePort();
  const child = spawn(
    "/bin/sh",
    ["-c", `ulimit -n ${FD_LIMIT} && exec "$0" "$@"`, process.execPath, join(root, "dist/src/server.js")],
    {
      cwd: temp.path,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        PORT: String(port),
        HOST: "127.0.0.1",
        DATABASE_PATH: join(temp.path, "agent.db"),
        WORKSPACE_ROOT: join(temp.path, "ws"),
        AGENT_API_KEYS: KEY,
        OPENAI_MODEL: "m",
        OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
        LOG_LEVEL: "warn",
        // As many runs at once as the tests start (two keys'), not the default 64: MAX_CONNECTIONS's
        // default keeps 6 descriptors for each, and 64 runs would need more than 128 in all.
        MAX_CONCURRENT_RUNS: "2",
        ...compileCacheEnv,
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  for (const stream of [child.stdout, child.stderr]) stream?.on("data", (d) => (output += d));
  cleanups.push(() => stop(child));
  const deadline = Date.now() + 15_000;
  while ((await healthz(port)) !== 200) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the server did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, output: () => output };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGKILL");
  await once(child, "exit");
}

/** GET /healthz on a new connection (a pooled one would not need a free descriptor): its status, or the error. */
export function healthz(port: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/healthz", agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err) => resolve((err as NodeJS.ErrnoException).code ?? err.message));
  });
}

/** /healthz's status once it is 200, or its last answer after `ms`. */
export async function healthzWithin(port: number, ms: number): Promise<number | string> {
  const deadline = Date.now() + ms;
  let answer = await healthz(port);
  while (answer !== 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    answer = await healthz(port);
  }
  return answer;
}
