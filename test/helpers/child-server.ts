import { type ChildProcess, type StdioOptions, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { compileCacheEnv } from "./compile-cache.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface ChildServer {
  url: string;
  pid: number;
  process: ChildProcess;
  /** Everything the process wrote to stderr and stdout. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<number | string>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  server.close();
  await once(server, "close");
  return port;
}

/** A port something listens on (127.0.0.1) until `close`. */
export async function busyPort(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Starts the built server (`node dist/src/server.js`, as in production) over the
 * data directory `dir`, and resolves once `/healthz` answers.
 */
export async function startChildServer({
  dir,
  upstreamURL,
  env = {},
  stdio = ["ignore", "pipe", "pipe"],
  onOutput,
  onSpawn,
  readyMs = 15_000,
}: {
  dir: string;
  upstreamURL: string;
  env?: Record<string, string>;
  /** Its descriptors; stdout and stderr must be pipes (its output is read). */
  stdio?: StdioOptions;
  /** Told each piece of its output as it comes, also before it is ready. */
  onOutput?: (text: string) => void;
  /** Called with the process as soon as it is spawned, before it is ready (to kill it while it starts). */
  onSpawn?: (child: ChildProcess) => void;
  /** How long it may take to answer `/healthz` before it is killed and the start fails. */
  readyMs?: number;
}): Promise<ChildServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, "dist/src/server.js")], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_PATH: join(dir, "agent.db"),
      WORKSPACE_ROOT: join(dir, "workspaces"),
      OPENAI_BASE_URL: upstreamURL,
      OPENAI_API_KEY: "sk-test-key",
      OPENAI_MODEL: "fake-model",
      MODEL_MAX_RETRIES: "0",
      LOG_LEVEL: "warn",
      ...compileCacheEnv,
      ...env,
    },
    stdio,
  });
  onSpawn?.(child);
  let output = "";
  const take = (d: Buffer) => {
    output += d;
    onOutput?.(String(d));
  };
  child.stdout?.on("data", take);
  child.stderr?.on("data", take);
  const exited = new Promise<number | string>((resolve) =>
    child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server exited before it was ready:\n${output}`);
    }
    try {
      // A bare connect first: a refused one costs a sixth of a refused fetch's CPU, so the
      // port can be tried often while the server starts (about a second each time).
      if ((await listening(port)) && (await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      // Not left running behind the failure (nothing else holds it to stop it).
      child.kill("SIGKILL");
      throw new Error(`server did not become healthy:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return { url, pid: child.pid as number, process: child, output: () => output, exited };
}

export async function api(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Runs the built server with `env` until it exits (it should refuse to start); its exit code and output. */
export function startRefused(dir: string, env: Record<string, string>): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [join(root, "dist/src/server.js")], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOST: "127.0.0.1",
      PORT: "0",
      DATABASE_PATH: join(dir, "data", "agent.db"),
      WORKSPACE_ROOT: join(dir, "workspaces"),
      LOG_LEVEL: "warn",
      OPENAI_API_KEY: "sk-test-key",
      OPENAI_MODEL: "fake-model",
      ...compileCacheEnv,
      ...env,
    },
    encoding: "utf8",
    timeout: 15_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}
