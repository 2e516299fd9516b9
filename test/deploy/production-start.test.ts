/**
 * The Dockerfile's runtime stage, rehearsed without a Docker engine.
 *
 * In a temp dir: package.json and package-lock.json, the production dependencies only,
 * dist/, migrations/ and openapi.yaml — what the runtime stage copies. Then the
 * Dockerfile's CMD is spawned with the Dockerfile's ENV (read from the file, so the two
 * cannot drift; PORT, DATABASE_PATH and WORKSPACE_ROOT are pointed at this machine),
 * and the server must answer its HEALTHCHECK, serve a run, and exit 0 on SIGTERM, also
 * when SIGTERM comes twice during a live run.
 *
 * Production dependencies: the build stage runs `npm ci` then `npm prune --omit=dev`.
 * `npm ci --omit=dev` here would compile better-sqlite3 again (~75 s), so the test copies
 * the checkout's node_modules (the state after `npm ci`) and runs the same
 * `npm prune --omit=dev` the Dockerfile runs, which takes seconds and leaves exactly the
 * production set, the native binary included.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { tempDir } from "../helpers/temp-dir.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
/** The bearer key the rehearsed container is started with. */
const API_KEY = "rehearsal-key-0123456789";

interface RuntimeStage {
  env: Record<string, string>;
  cmd: string[];
  healthcheck: string[];
  user: string | null;
  copies: string[];
}

/** Splits `K=V K2="v 2"` into pairs. */
function parseEnvInstruction(args: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = m[2] ?? "";
    env[m[1] as string] = raw.startsWith('"') ? JSON.parse(raw) : raw;
  }
  return env;
}

/** The last stage of the Dockerfile: its ENV, CMD (exec form), HEALTHCHECK CMD, USER, COPY sources. */
function parseRuntimeStage(dockerfile: string): RuntimeStage {
  const instructions = dockerfile
    .replace(/\\\r?\n/g, " ")
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  let lastFrom = -1;
  instructions.forEach((l, i) => {
    if (/^FROM\s/i.test(l)) lastFrom = i;
  });
  const stage: RuntimeStage = { env: {}, cmd: [], healthcheck: [], user: null, copies: [] };
  for (const line of instructions.slice(lastFrom + 1)) {
    const [, keyword = "", args = ""] = /^(\S+)\s+(.*)$/.exec(line) ?? [];
    switch (keyword.toUpperCase()) {
      case "ENV":
        Object.assign(stage.env, parseEnvInstruction(args));
        break;
      case "CMD":
        stage.cmd = JSON.parse(args);
        break;
      case "HEALTHCHECK":
        stage.healthcheck = JSON.parse(args.slice(args.indexOf("CMD ") + 4));
        break;
      case "USER":
        stage.user = args.trim();
        break;
      case "COPY":
        if (!args.includes("--from=")) stage.copies.push(...args.split(/\s+/).slice(0, -1));
        break;
    }
  }
  return stage;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** dist/ into `app`: the checkout's when it is newer than the sources, else compiled there. */
async function provideDist(app: string): Promise<string> {
  const built = join(root, "dist/src/server.js");
  const sources = Math.max(newestMtime(join(root, "src")), newestMtime(join(root, "routes")));
  if (existsSync(built) && statSync(built).mtimeMs >= sources) {
    cpSync(join(root, "dist"), join(app, "dist"), { recursive: true });
    return "copied the checkout's dist/";
  }
  await run(
    process.execPath,
    [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.json"), "--outDir", join(app, "dist")],
    { cwd: root },
  );
  return "compiled dist/ with tsc";
}

/**
 * The production dependencies into `app`: node_modules as `npm ci` left it, then the
 * Dockerfile's `npm prune --omit=dev`.
 */
async function provideProductionDependencies(app: string): Promise<void> {
  await run("cp", ["-R", join(root, "node_modules"), join(app, "node_modules")]);
  await run("npm", ["prune", "--omit=dev", "--no-audit", "--no-fund"], {
    cwd: app,
    env: { ...process.env, npm_config_update_notifier: "false", npm_config_loglevel: "error" },
  });
}

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

describe("the Dockerfile's runtime stage, without Docker", () => {
  const stage = parseRuntimeStage(readFileSync(join(root, "Dockerfile"), "utf8"));
  let temp: { path: string; cleanup: () => void };
  let app: string;
  let upstream: FakeUpstream;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    temp = tempDir("agent-production-");
    app = join(temp.path, "app");
    for (const file of ["package.json", "package-lock.json"]) cpSync(join(root, file), join(app, file));
    for (const source of stage.copies) cpSync(join(root, source), join(app, source), { recursive: true });
    await Promise.all([provideDist(app), provideProductionDependencies(app)]);
    // The Dockerfile's last build step, over what the runtime stage copies.
    await run(process.execPath, [join(root, "scripts/slim-image.mjs"), app]);
    upstream = await startFakeUpstream();
  }, 120_000);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await upstream?.close();
    temp?.cleanup();
  });

  /** Spawns the CMD with the image's ENV, this machine's port and paths, and the fake model. */
  async function start(): Promise<Started> {
    const [command, ...args] = stage.cmd;
    const port = await freePort();
    const env = {
      PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: temp.path,
      ...stage.env,
      PORT: String(port),
      DATABASE_PATH: join(temp.path, "data/agent.db"),
      WORKSPACE_ROOT: join(temp.path, "workspaces"),
      OPENAI_BASE_URL: upstream.baseURL,
      OPENAI_MODEL: "fake-model",
      MODEL_MAX_RETRIES: "0",
      // As the README's `docker run` does: the image listens on 0.0.0.0, which needs keys.
      AGENT_API_KEYS: API_KEY,
    };
    const child = spawn(command === "node" ? process.execPath : (command as string), args, {
      cwd: app,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let output = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("exit", (code, signal) => resolve({ code, signal })),
    );
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}:\n${output}`);
      const ok = await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`the server did not answer /healthz within 15 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // The image's HEALTHCHECK, run as Docker would: inside the container, with its environment.
    const [hcCommand, ...hcArgs] = stage.healthcheck;
    await run(hcCommand === "node" ? process.execPath : (hcCommand as string), hcArgs, { env, timeout: 5000 });
    return { child, url, output: () => output, exit };
  }

  /** SIGTERM (`times` in a row); resolves with how it exited and how long it took. */
  async function stop(server: Started, times = 1) {
    const begin = Date.now();
    for (let i = 0; i < times; i++) server.child.kill("SIGTERM");
    const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 10_000));
    const result = await Promise.race([server.exit, timeout]);
    if (result === "timeout") throw new Error(`no exit within 10 s of SIGTERM:\n${server.output()}`);
    return { ...result, ms: Date.now() - begin };
  }

  async function json(url: string, method = "GET", body?: unknown) {
    const res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  }

  it("the Dockerfile's runtime stage is what this test rehearses", () => {
    expect(stage.env).toMatchObject({
      HOST: "0.0.0.0",
      PORT: "3000",
      DATABASE_PATH: "/data/agent.db",
      WORKSPACE_ROOT: "/workspaces",
      NODE_ENV: "production",
    });
    expect(stage.cmd).toEqual(["node", "dist/src/server.js"]);
    expect(stage.user).toBe("node");
    expect(stage.healthcheck[0]).toBe("node");
    expect(stage.copies).toEqual(expect.arrayContaining(["migrations", "openapi.yaml", "package.json"]));
  });

  it("only production dependencies are installed: the lockfile's dev-only packages are gone", () => {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
    const entries = Object.entries(lock.packages as Record<string, { dev?: boolean; optional?: boolean }>).filter(
      ([path]) => path.startsWith("node_modules/"),
    );
    const devOnly = entries.filter(([, p]) => p.dev).map(([path]) => path);
    const production = entries.filter(([, p]) => !p.dev && !p.optional).map(([path]) => path);
    expect(devOnly).toEqual(expect.arrayContaining(["node_modules/typescript", "node_modules/vitest"]));
    expect(devOnly.filter((path) => existsSync(join(app, path)))).toEqual([]);
    expect(production.filter((path) => !existsSync(join(app, path)))).toEqual([]);
  });

  it("the image keeps no build leftovers: better-sqlite3's sources, other platforms' binaries, source maps", () => {
    const sqlite = join(app, "node_modules/better-sqlite3");
    for (const leftover of ["deps", "src", "binding.gyp"]) expect(existsSync(join(sqlite, leftover))).toBe(false);
    const binaries = existsSync(join(sqlite, "prebuilds")) ? readdirSync(join(sqlite, "prebuilds")) : [];
    const compiled = existsSync(join(sqlite, "build/Release/better_sqlite3.node"));
    // Exactly one binary stays: this platform's (the server loads it in the tests below).
    expect(binaries.length + (compiled ? 1 : 0)).toBe(1);
    const maps: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) walk(join(dir, entry.name));
        else if (entry.name.endsWith(".map")) maps.push(join(dir, entry.name));
      }
    };
    walk(join(app, "node_modules"));
    walk(join(app, "dist"));
    expect(maps).toEqual([]);
  });

  it("serves a run to completion with the image's ENV and CMD, then exits 0 on SIGTERM", async () => {
    const server = await start();
    expect((await json(`${server.url}/readyz`)).status).toBe(200);
    upstream.enqueue({ text: "hello from production" });
    const session = await json(`${server.url}/sessions`, "POST", {});
    expect(session.status).toBe(201);
    const done = await json(`${server.url}/sessions/${session.body.id}/runs?wait=true`, "POST", { input: "hi" });
    expect(done.status).toBe(200);
    expect(done.body.run).toMatchObject({ status: "finished", stopReason: "complete" });
    expect(done.body.text).toBe("hello from production");
    const spec = await fetch(`${server.url}/openapi.yaml`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(spec.status).toBe(200);
    expect((await fetch(`${server.url}/sessions`)).status).toBe(401);
    // The command-line client runs in the image too (`docker exec -it <container> npx agent-server run ...`).
    upstream.enqueue({ text: "hello from the client" });
    const cli = await run(process.execPath, [join(app, "bin/agent-server.mjs"), "run", "hi"], {
      cwd: app,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENT_URL: server.url, AGENT_API_KEY: API_KEY },
    });
    expect(cli.stdout).toBe("hello from the client\n");

    const exit = await stop(server);
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(10_000);
  });

  it("SIGTERM twice during a live run: exits 0, and the restart finds the run waiting for the same approval", async () => {
    const first = await start();
    upstream.enqueue({
      toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"x"}' }],
    });
    const session = (await json(`${first.url}/sessions`, "POST", {})).body;
    const started = await json(`${first.url}/sessions/${session.id}/runs`, "POST", { input: "write a.txt" });
    expect(started.status).toBe(201);
    const deadline = Date.now() + 5000;
    while ((await json(`${first.url}/runs/${started.body.id}`)).body.status !== "awaiting_approval") {
      if (Date.now() > deadline) throw new Error(`the run never awaited approval:\n${first.output()}`);
      await new Promise((r) => setTimeout(r, 20));
    }

    const exit = await stop(first, 2);
    expect(exit, first.output()).toMatchObject({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(10_000);

    // ON_RESTART is `resume` (the default): the run was left as it was, for the restart.
    const second = await start();
    const view = await json(`${second.url}/runs/${started.body.id}`);
    expect(view.body).toMatchObject({ status: "awaiting_approval" });
    const pending = (await json(`${second.url}/runs/${started.body.id}/approvals`)).body.items;
    expect(pending.map((p: { toolCallId: string }) => p.toolCallId)).toEqual(["call_w"]);
    const messages = (await json(`${second.url}/sessions/${session.id}/messages`)).body.items;
    expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    expect(existsSync(join(temp.path, "workspaces", session.workspace, "a.txt"))).toBe(false);
    expect(await stop(second)).toMatchObject({ code: 0, signal: null });
  });
});
