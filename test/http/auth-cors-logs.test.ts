import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { composeContext } from "../../src/compose.js";
import { loadConfig } from "../../src/config.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const as = (key: string) => ({ authorization: `Bearer ${key}` });

describe("API keys", () => {
  it("without a valid bearer key every route but health answers 401 with WWW-Authenticate", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}` } });
    for (const path of ["/sessions", "/tools", "/runs/run_x", "/openapi.yaml"]) {
      const res = await server.request("GET", path);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
    const wrong = await server.request("GET", "/sessions", { headers: as("not-a-key-0123456789") });
    expect(wrong.status).toBe(401);
    expect((await server.request("GET", "/healthz")).status).toBe(200);
    expect((await server.request("GET", "/readyz")).status).toBe(200);
    expect((await server.request("GET", "/sessions", { headers: as(KEY_A) })).status).toBe(200);
  });

  it("a key sees and touches only the sessions and runs it created; others get 404", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}` } });
    server.upstream.enqueue({ text: "hi" });
    const mine = await server.request("POST", "/sessions", { body: {}, headers: as(KEY_A) });
    const run = await server.request("POST", `/sessions/${mine.body.id}/runs?wait=true`, {
      body: { input: "x" },
      headers: as(KEY_A),
    });
    const runId = run.body.run.id;
    const other = as(KEY_B);
    expect((await server.request("GET", `/sessions/${mine.body.id}`, { headers: other })).status).toBe(404);
    expect((await server.request("GET", `/sessions/${mine.body.id}/messages`, { headers: other })).status).toBe(404);
    expect(
      (await server.request("POST", `/sessions/${mine.body.id}/runs`, { body: { input: "y" }, headers: other })).status,
    ).toBe(404);
    expect((await server.request("GET", `/runs/${runId}`, { headers: other })).status).toBe(404);
    expect((await server.request("GET", `/runs/${runId}/events`, { headers: other })).status).toBe(404);
    expect((await server.request("DELETE", `/runs/${runId}`, { headers: other })).status).toBe(404);
    expect((await server.request("DELETE", `/sessions/${mine.body.id}`, { headers: other })).status).toBe(404);
    expect((await server.request("GET", "/sessions", { headers: other })).body.items).toEqual([]);
    const listed = await server.request("GET", "/sessions", { headers: as(KEY_A) });
    expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([mine.body.id]);
    expect((await server.request("GET", `/runs/${runId}`, { headers: as(KEY_A) })).status).toBe(200);
  });
});

describe("CORS", () => {
  it("answers a preflight from an allowed origin with the methods and headers the API uses", async () => {
    server = await startTestServer({ env: { CORS_ORIGINS: "https://app.example" } });
    const res = await fetch(`${server.url}/sessions`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,idempotency-key",
      },
    });
    expect(res.status).toBeLessThan(300);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(res.headers.get("access-control-allow-methods")).toMatch(/DELETE/);
    expect(res.headers.get("access-control-allow-headers")).toMatch(/idempotency-key/);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    // A browser script may read the request id and Retry-After of a real response.
    const real = await fetch(`${server.url}/sessions`, { headers: { origin: "https://app.example" } });
    expect(real.headers.get("access-control-expose-headers")).toMatch(/x-request-id/);
    expect(real.headers.get("x-request-id")).toMatch(/^req_/);
    const other = await fetch(`${server.url}/sessions`, { headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("logs", () => {
  it("are JSON lines with a request id (also sent back in X-Request-Id), session and run ids, and never contain a key", async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split("\n").filter(Boolean));
        done();
      },
    });
    const config = loadConfig({
      DATABASE_PATH: join(dir.path, "a.db"),
      WORKSPACE_ROOT: join(dir.path, "ws"),
      AGENT_API_KEYS: KEY_A,
      OPENAI_MODEL: "m",
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      MODEL_MAX_RETRIES: "0",
    });
    const logger = pino({ level: "info", redact: ["req.headers.authorization"] }, sink);
    const ctx = composeContext(config, logger);
    const app = await buildApp(ctx, logger);
    const created = await app.inject({ method: "POST", url: "/sessions", headers: as(KEY_A), payload: {} });
    const id = JSON.parse(created.body).id;
    const got = await app.inject({ method: "GET", url: `/sessions/${id}`, headers: as(KEY_A) });
    const refused = await app.inject({ method: "GET", url: "/sessions", headers: as("wrong-key-0123456789") });
    // The model is unreachable: the run ends at once (an error), and is logged from start to end.
    const waited = await app.inject({
      method: "POST",
      url: `/sessions/${id}/runs?wait=true`,
      headers: as(KEY_A),
      payload: { input: "hi" },
    });
    const runId = JSON.parse(waited.body).run.id;
    await app.close();
    await ctx.store.close();
    dir.cleanup();
    const parsed = lines.map((l) => JSON.parse(l));
    const lookup = parsed.find((l) => l.url === `/sessions/${id}`);
    expect(lookup).toMatchObject({ sessionId: id, statusCode: 200 });
    expect(lookup.reqId).toMatch(/^req_/);
    // Each response names its request: the id in the log line, also on a refused request.
    expect(got.headers["x-request-id"]).toBe(lookup.reqId);
    expect(refused.headers["x-request-id"]).toMatch(/^req_/);
    expect(parsed.find((l) => l.msg === "run started")).toMatchObject({ runId, sessionId: id, resumed: false });
    expect(parsed.find((l) => l.msg === "run finished")).toMatchObject({ runId, sessionId: id, stopReason: "error" });
    expect(lines.join("\n")).not.toContain(KEY_A);
    expect(lines.join("\n")).not.toContain("wrong-key-0123456789");
  });
});

describe("shared workspaces with API keys", () => {
  it("a shared workspace name is shared among one key's sessions, never across keys", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}` } });
    const create = (key: string) =>
      server!.request("POST", "/sessions", { body: { workspace: "team" }, headers: as(key) }).then((r) => r.body);
    const [a1, a2, b1] = [await create(KEY_A), await create(KEY_A), await create(KEY_B)];
    expect(a1.workspace).toBe("team");
    expect(b1.workspace).toBe("team");
    const path = async (s: { id: string }, key: string) =>
      server!.ctx.sessions.workspacePath(
        await server!.ctx.sessions.record(s.id, server!.ctx.apiKeys.authenticate(`Bearer ${key}`)),
      );
    expect(await path(a1, KEY_A)).toBe(await path(a2, KEY_A));
    expect(await path(b1, KEY_B)).not.toBe(await path(a1, KEY_A));
  });
});

describe("per-key limits", () => {
  it("MAX_RUNS_PER_KEY without AGENT_API_KEYS is bad configuration naming both variables", () => {
    const base = { OPENAI_MODEL: "m", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" };
    expect(() => loadConfig({ ...base, MAX_RUNS_PER_KEY: "2" })).toThrow(/MAX_RUNS_PER_KEY[^\n]*AGENT_API_KEYS/);
    expect(loadConfig({ ...base, MAX_RUNS_PER_KEY: "2", AGENT_API_KEYS: KEY_A }).MAX_RUNS_PER_KEY).toBe(2);
    expect(loadConfig(base).MAX_RUNS_PER_KEY).toBe(0);
  });
});
