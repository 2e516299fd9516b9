import { execFile } from "node:child_process";
import { chmodSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { compileCacheEnv } from "../helpers/compile-cache.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const KEY = "key-a-0123456789abcdef";
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(
  env: Record<string, string>,
): Promise<{ server: ChildServer; dir: string; upstream: FakeUpstream }> {
  const temp = tempDir("closed-doors-");
  cleanups.push(temp.cleanup);
  const upstream: FakeUpstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const server = await startChildServer({ dir: temp.path, upstreamURL: upstream.baseURL, env });
  cleanups.push(async () => {
    server.process.kill("SIGKILL");
    await server.exited;
  });
  return { server, dir: temp.path, upstream };
}

describe("a server reachable from other machines needs keys", () => {
  /** Runs the built server with `env` until it exits (it should refuse to start). */
  function refused(env: Record<string, string>): Promise<{ status: number | null; output: string }> {
    const temp = tempDir("exposure-");
    cleanups.push(temp.cleanup);
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [join(root, "dist/src/server.js")],
        {
          cwd: temp.path,
          env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            PORT: "0",
            DATABASE_PATH: join(temp.path, "a.db"),
            ...compileCacheEnv,
            ...env,
          },
          encoding: "utf8",
          // A guard against a start that never ends, not a bound on how fast it is refused: five
          // servers start at once here, beside another test file (a browser's launch, on 2 cores).
          timeout: 30_000,
        },
        (error, stdout, stderr) =>
          resolve({
            status: error ? (typeof error.code === "number" ? error.code : null) : 0,
            output: `${stdout}${stderr}`,
          }),
      );
    });
  }

  // The five servers are independent (each its own directory, port and upstream): started at once.
  it("HOST=0.0.0.0 without AGENT_API_KEYS exits 2 naming AGENT_API_KEYS and ALLOW_UNAUTHENTICATED; listens with either", async () => {
    const [refusals, [, allowed]] = await Promise.all([
      Promise.all(["0.0.0.0", "::"].map((host) => refused({ HOST: host, WORKSPACE_ROOT: "ws" }))),
      // With a key, or the operator's explicit consent, it listens; loopback needs neither.
      Promise.all([
        start({ HOST: "0.0.0.0", AGENT_API_KEYS: KEY }),
        start({ HOST: "0.0.0.0", ALLOW_UNAUTHENTICATED: "1" }),
        start({ HOST: "localhost" }),
      ]),
    ]);
    for (const open of refusals) {
      expect(open.status, open.output).toBe(2);
      expect(open.output).toMatch(/HOST: .*AGENT_API_KEYS.*ALLOW_UNAUTHENTICATED=1/);
    }
    expect(allowed.server.output()).toMatch(/serving without authentication/);
  }, 60_000);
});

describe("what the server creates is private to its user", () => {
  it("the database, its WAL and the workspaces are 0600/0700, and so is what write_file and shell create", async () => {
    const { server, dir, upstream } = await start({});
    const post = (path: string, body: unknown) =>
      fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<{ id: string; workspace: string }>);
    const session = await post("/sessions", { approval: { tools: { shell: "allow", write_file: "allow" } } });
    upstream.enqueue(
      {
        toolCalls: [
          { id: "call_w", name: "write_file", arguments: '{"path":"w.txt","content":"x"}' },
          { id: "call_s", name: "shell", arguments: '{"command":"echo x > s.txt && mkdir d"}' },
        ],
      },
      { text: "done" },
    );
    await post(`/sessions/${session.id}/runs?wait=true`, { input: "go" });
    const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
    const dbFiles = readdirSync(dir).filter((name) => name.startsWith("agent.db"));
    expect(dbFiles).toEqual(expect.arrayContaining(["agent.db", "agent.db-wal"]));
    for (const name of dbFiles) expect(mode(join(dir, name)), name).toBe("600");
    expect(mode(join(dir, "workspaces"))).toBe("700");
    const workspace = join(dir, "workspaces", session.workspace);
    expect(mode(workspace)).toBe("700");
    expect(mode(join(workspace, "w.txt"))).toBe("600");
    // Shell commands inherit the server's umask: what they create is private too.
    expect(mode(join(workspace, "s.txt"))).toBe("600");
    expect(mode(join(workspace, "d"))).toBe("700");

    // A database an earlier version left world-readable is made private at the next start.
    server.process.kill("SIGTERM");
    await server.exited;
    chmodSync(join(dir, "agent.db"), 0o644);
    const again = await startChildServer({ dir, upstreamURL: upstream.baseURL });
    cleanups.push(async () => {
      again.process.kill("SIGKILL");
      await again.exited;
    });
    expect(mode(join(dir, "agent.db"))).toBe("600");
  });
});

describe("logs", () => {
  it("credentials in a query string, or an API key in any encoding in a URL, never reach the log", async () => {
    const { server } = await start({ AGENT_API_KEYS: KEY, LOG_LEVEL: "info" });
    const bearer64 = Buffer.from(`Bearer ${KEY}`).toString("base64");
    const paths = [
      "/sessions?token=tok-secret-1&limit=5",
      "/sessions?api_key=tok-secret-2",
      "/sessions?access_token=tok-secret-3&KEY=tok-secret-4",
      `/nowhere?x=${encodeURIComponent(bearer64)}`,
      `/nowhere?x=${KEY.toUpperCase()}`,
      `/nowhere?x=${[...KEY].map((c) => `%${c.charCodeAt(0).toString(16)}`).join("")}`,
    ];
    for (const path of paths) {
      await fetch(server.url + path, { headers: { authorization: `Bearer ${KEY}` } }).then((r) => r.text());
    }
    // Each request's line is written once its answer has gone: read the log once all six are in
    // it (a fixed 200 ms was not always enough for a loaded server to write them).
    const requestLines = (log: string) =>
      log.split("\n").filter((line) => line.includes('"msg":"request"') && /"url":"\/(sessions|nowhere)/.test(line));
    const log = await until(
      () => server.output(),
      (output) => requestLines(output).length >= paths.length,
      "the requests' log lines",
    );
    expect(requestLines(log)).toHaveLength(paths.length);
    expect(log).toContain('"url":"/sessions?token=[redacted]&limit=5"');
    expect(log).toContain("api_key=[redacted]");
    for (const secret of ["tok-secret-1", "tok-secret-2", "tok-secret-3", "tok-secret-4"]) {
      expect(log).not.toContain(secret);
    }
    for (const leak of [KEY, KEY.toUpperCase(), bearer64.slice(12, -4), encodeURIComponent(bearer64).slice(12, -6)]) {
      expect(log, leak).not.toContain(leak);
    }
    expect(log).not.toMatch(/%6b%65%79%2d/i);
  });
});
