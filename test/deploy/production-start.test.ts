/**
 * The Dockerfile's runtime stage, rehearsed without a Docker engine (test/helpers/image-rehearsal.ts):
 * /app holding what the stage copies and the production dependencies only, slimmed, and the
 * Dockerfile's CMD run with its ENV (read from the file, so the two cannot drift; PORT,
 * DATABASE_PATH and WORKSPACE_ROOT are pointed at the rehearsal's directories) as the image's
 * user. The server must answer its HEALTHCHECK, serve a run, and exit 0 on SIGTERM, also when
 * SIGTERM comes twice during a live run; the README's `docker exec` command runs the client.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { asImageUser, type RuntimeRehearsal, rehearseRuntimeStage } from "../helpers/image-rehearsal.js";
import { type ImageServer, startImageServer, stopImageServer } from "../helpers/image-server.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** The bearer key the rehearsed container is started with. */
const API_KEY = "rehearsal-key-0123456789";

describe("the Dockerfile's runtime stage, without Docker", () => {
  let image: RuntimeRehearsal;
  let upstream: FakeUpstream;
  const servers: ImageServer[] = [];

  beforeAll(async () => {
    [image, upstream] = await Promise.all([rehearseRuntimeStage(), startFakeUpstream()]);
  }, 120_000);

  afterAll(async () => {
    for (const { child } of servers) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await upstream?.close();
    image?.cleanup();
  });

  /** The image's CMD with the fake model, and a key as the README's `docker run` gives it. */
  async function start(): Promise<ImageServer> {
    const server = await startImageServer(image, {
      OPENAI_BASE_URL: upstream.baseURL,
      OPENAI_MODEL: "fake-model",
      MODEL_MAX_RETRIES: "0",
      // As the README's `docker run` does: the image listens on 0.0.0.0, which needs keys.
      AGENT_API_KEYS: API_KEY,
    });
    servers.push(server);
    return server;
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
    expect(image.stage.env).toMatchObject({
      HOST: "0.0.0.0",
      PORT: "3000",
      DATABASE_PATH: "/data/agent.db",
      WORKSPACE_ROOT: "/workspaces",
      NODE_ENV: "production",
    });
    expect(image.stage.cmd).toEqual(["node", "dist/src/server.js"]);
    expect(image.stage.user).toBe("node");
    expect(image.stage.healthcheck[0]).toBe("node");
    expect(image.stage.copies).toEqual(expect.arrayContaining(["migrations", "openapi.yaml", "package.json"]));
    expect(image.stage.from).toMatch(/^node:\d+-bookworm-slim\b/);
  });

  it("only production dependencies are installed: the lockfile's dev-only packages are gone", () => {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
    const entries = Object.entries(lock.packages as Record<string, { dev?: boolean; optional?: boolean }>).filter(
      ([path]) => path.startsWith("node_modules/"),
    );
    const devOnly = entries.filter(([, p]) => p.dev).map(([path]) => path);
    const production = entries.filter(([, p]) => !p.dev && !p.optional).map(([path]) => path);
    expect(devOnly).toEqual(expect.arrayContaining(["node_modules/typescript", "node_modules/vitest"]));
    expect(devOnly.filter((path) => existsSync(join(image.app, path)))).toEqual([]);
    expect(production.filter((path) => !existsSync(join(image.app, path)))).toEqual([]);
  });

  it("the image keeps no build leftovers: better-sqlite3's sources, other platforms' binaries, source maps", () => {
    const sqlite = join(image.app, "node_modules/better-sqlite3");
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
    walk(join(image.app, "node_modules"));
    walk(join(image.app, "dist"));
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

    const exit = await stopImageServer(server);
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(10_000);
  });

  // `docker exec` runs a command as the image's user in /app, whose files root owns: npx, which
  // would install the project as a link and chmod its bin there, fails with EPERM.
  it(`the README's \`docker exec ... <container> <client command>\` prints the run's answer (${asImageUser ? "as the image's user" : "as this user: run as root to rehearse the image's"})`, async () => {
    const docker = readFileSync(join(root, "README.md"), "utf8").split("\n## Docker\n")[1]?.split("\n## ")[0] ?? "";
    const exec = /`docker exec -it -e AGENT_API_KEY=\S+ <container> ([^`]+)`/.exec(docker);
    if (!exec) throw new Error("the README's Docker section no longer shows the client run with docker exec");
    const command = (exec[1] as string).replace('"..."', '"say hello"');
    const server = await start();
    upstream.enqueue({ text: "hello from the client" });
    // The image's environment plus `-e AGENT_API_KEY`; AGENT_URL points at the rehearsal's port
    // (the image's is 3000, the client's default). npm, if the command used it, stays offline.
    const env = image.env({ AGENT_API_KEY: API_KEY, AGENT_URL: server.url, npm_config_offline: "true" });
    const result = await image.run(["/bin/sh", "-c", command], env).finally(() => stopImageServer(server));
    expect({ code: result.code, stdout: result.stdout }, `${command}\n${result.stderr}`).toEqual({
      code: 0,
      stdout: "hello from the client\n",
    });
    expect(await server.exit).toMatchObject({ code: 0, signal: null });
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

    const exit = await stopImageServer(first, 2);
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
    expect(existsSync(join(image.workspaces, session.workspace, "a.txt"))).toBe(false);
    expect(await stopImageServer(second)).toMatchObject({ code: 0, signal: null });
  });
});
