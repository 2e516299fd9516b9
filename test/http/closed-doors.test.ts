import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Polls the run until `done` holds for it. */
async function waitForRun(s: TestServer, runId: string, done: (run: { status: string }) => boolean, headers = {}) {
  const deadline = Date.now() + 5000;
  for (;;) {
    const run = (await s.request("GET", `/runs/${runId}`, { headers })).body;
    if (done(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} stayed ${run.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("APPROVAL_POLICY_MAX: a session or run may make a tool stricter, never looser", () => {
  it("a client asking for shell=allow, or a default that would allow shell, gets 400 naming the tool", async () => {
    server = await startTestServer({ env: { APPROVAL_POLICY_MAX: "shell=ask,write_file=ask" } });
    const shellAllowed = await server.request("POST", "/sessions", {
      body: { approval: { tools: { shell: "allow" } } },
    });
    expect(shellAllowed.status).toBe(400);
    expect(shellAllowed.body.error.code).toBe("APPROVAL_POLICY_TOO_LOOSE");
    expect(shellAllowed.body.error.message).toContain("shell (at most ask)");
    expect(shellAllowed.body.error.details).toEqual({ tools: { shell: "ask" } });

    // A default applies to every tool the policy does not name: both capped tools are named.
    const allowAll = await server.request("POST", "/sessions", { body: { approval: { default: "allow" } } });
    expect(allowAll.status).toBe(400);
    expect(allowAll.body.error.details.tools).toEqual({ shell: "ask", write_file: "ask" });

    // Stricter, or a default that the named tools override, is fine.
    const fine = await server.request("POST", "/sessions", {
      body: { approval: { default: "allow", tools: { shell: "deny", write_file: "ask" } } },
    });
    expect(fine.status).toBe(201);

    // A run cannot loosen what its session may not: 400, nothing started.
    const plain = (await server.request("POST", "/sessions", { body: {} })).body;
    const run = await server.request("POST", `/sessions/${plain.id}/runs`, {
      body: { input: "rm -rf", approval: { tools: { shell: "allow" } } },
    });
    expect(run.status).toBe(400);
    expect(run.body.error.code).toBe("APPROVAL_POLICY_TOO_LOOSE");
    expect(run.body.error.message).toContain("shell");
    const runDefault = await server.request("POST", `/sessions/${plain.id}/runs`, {
      body: { input: "x", approval: { default: "allow" } },
    });
    expect(runDefault.status).toBe(400);
    expect((await server.request("GET", `/sessions/${plain.id}/runs`)).body.items).toEqual([]);
    expect(server.upstream.requests).toHaveLength(0);
  });

  it("the ceiling also caps what a tool gets without override: read_file under *=ask waits for approval", async () => {
    server = await startTestServer({ env: { APPROVAL_POLICY_MAX: "*=ask" } });
    const tools = (await server.request("GET", "/tools")).body.items as { name: string; defaultApproval: string }[];
    expect(tools.find((t) => t.name === "read_file")?.defaultApproval).toBe("ask");
    server.upstream.enqueue({ toolCalls: [{ id: "call_r", name: "read_file", arguments: '{"path":"a.txt"}' }] });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const started = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "read" } });
    expect(started.status).toBe(201);
    const run = await waitForRun(server, started.body.id, (r) => r.status === "awaiting_approval");
    expect(run.status).toBe("awaiting_approval");
  });

  it("a misspelt tool or mode in the ceiling is refused at start, naming the variable", async () => {
    expect(() => loadConfig({ APPROVAL_POLICY_MAX: "shell=maybe" })).toThrow(/APPROVAL_POLICY_MAX: "shell=maybe"/);
    await expect(startTestServer({ env: { APPROVAL_POLICY_MAX: "Shell=ask" } })).rejects.toThrow(
      /APPROVAL_POLICY_MAX: unknown tools Shell/,
    );
  });
});

describe("per-key quotas", () => {
  it("MAX_RUNS_PER_KEY defaults to a quarter of MAX_CONCURRENT_RUNS (at least 1) once keys are set", () => {
    const base = { OPENAI_MODEL: "m", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" };
    expect(loadConfig({ ...base, AGENT_API_KEYS: KEY_A }).MAX_RUNS_PER_KEY).toBe(16);
    expect(loadConfig({ ...base, AGENT_API_KEYS: KEY_A, MAX_CONCURRENT_RUNS: "3" }).MAX_RUNS_PER_KEY).toBe(1);
    expect(loadConfig({ ...base, AGENT_API_KEYS: KEY_A, MAX_RUNS_PER_KEY: "0" }).MAX_RUNS_PER_KEY).toBe(0);
    expect(loadConfig({ ...base, AGENT_API_KEYS: KEY_A }).MAX_SESSIONS_PER_KEY).toBe(1000);
    expect(loadConfig(base).MAX_SESSIONS_PER_KEY).toBe(0);
  });

  it("one key cannot take every run slot by default: its second live run is 429 scope key, another key still runs", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, MAX_CONCURRENT_RUNS: "4" } });
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a","content":"x"}' }] },
      { toolCalls: [{ id: "call_v", name: "write_file", arguments: '{"path":"b","content":"x"}' }] },
    );
    const one = (await server.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body;
    const two = (await server.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body;
    const held = await server.request("POST", `/sessions/${one.id}/runs`, { body: { input: "w" }, headers: as(KEY_A) });
    await waitForRun(server, held.body.id, (r) => r.status === "awaiting_approval", as(KEY_A));
    const refused = await server.request("POST", `/sessions/${two.id}/runs`, {
      body: { input: "w" },
      headers: as(KEY_A),
    });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: "TOO_MANY_RUNS", details: { limit: 1, scope: "key" } });
    const other = (await server.request("POST", "/sessions", { body: {}, headers: as(KEY_B) })).body;
    const b = await server.request("POST", `/sessions/${other.id}/runs`, { body: { input: "w" }, headers: as(KEY_B) });
    expect(b.status).toBe(201);
  });

  it("MAX_SESSIONS_PER_KEY: a burst of creations stops at the quota (429 TOO_MANY_SESSIONS); deleting frees a place", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, MAX_SESSIONS_PER_KEY: "3" } });
    const create = (key: string) => server!.request("POST", "/sessions", { body: {}, headers: as(key) });
    const burst = await Promise.all(Array.from({ length: 20 }, () => create(KEY_A)));
    const created = burst.filter((r) => r.status === 201);
    expect(created).toHaveLength(3);
    const refused = burst.find((r) => r.status !== 201);
    expect(refused?.status).toBe(429);
    expect(refused?.body.error).toMatchObject({ code: "TOO_MANY_SESSIONS", details: { limit: 3, scope: "key" } });
    // No workspace is left behind by a refused creation.
    const { readdirSync } = await import("node:fs");
    expect(readdirSync(`${server.dir}/workspaces`).filter((n) => n.startsWith("ses_"))).toHaveLength(3);
    expect((await create(KEY_B)).status).toBe(201);
    const victim = created[0]?.body.id;
    expect((await server.request("DELETE", `/sessions/${victim}`, { headers: as(KEY_A) })).status).toBe(204);
    expect((await create(KEY_A)).status).toBe(201);
    expect((await create(KEY_A)).status).toBe(429);
  });
});

describe("JSON bodies", () => {
  it("deeply nested metadata (a 10 KB body) is 400 INVALID_BODY, not 500, and the server stays up", async () => {
    server = await startTestServer();
    const depth = 5000;
    const body = `{"metadata":{"a":${"[".repeat(depth)}${"]".repeat(depth)}}}`;
    expect(body.length).toBeGreaterThan(10_000);
    const res = await fetch(`${server.url}/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("INVALID_BODY");
    // Brackets inside strings are text, and moderate nesting is still accepted.
    const fine = await server.request("POST", "/sessions", {
      body: { metadata: { note: "[".repeat(depth), deep: JSON.parse(`${"[".repeat(30)}${"]".repeat(30)}`) } },
    });
    expect(fine.status).toBe(201);
    expect((await server.request("GET", "/healthz")).status).toBe(200);
  });
});

describe("MAX_TOOL_CALLS_PER_TURN", () => {
  it("a reply with more calls than the cap: the extra calls get a result saying so, never executed", async () => {
    server = await startTestServer({ env: { MAX_TOOL_CALLS_PER_TURN: "2" } });
    const writes = Array.from({ length: 5 }, (_, i) => ({
      id: `call_${i}`,
      name: "list_files",
      arguments: "{}",
    }));
    server.upstream.enqueue({ toolCalls: writes }, { text: "ok" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const done = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    expect(done.body.run).toMatchObject({ stopReason: "complete", stats: { toolCalls: 2 } });
    const results = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items.filter(
      (m: { role: string }) => m.role === "tool",
    );
    expect(results.map((m: { toolCallId: string }) => m.toolCallId)).toEqual(writes.map((w) => w.id));
    expect(results.map((m: { isError: boolean }) => m.isError)).toEqual([false, false, true, true, true]);
    expect(results[2].content).toMatch(/not executed: this reply made 5 tool calls and at most 2/);
    const steps = (await server.request("GET", `/runs/${done.body.run.id}/steps`)).body.items;
    expect(steps[0].tools.map((t: { errorCode: string | null }) => t.errorCode)).toEqual([
      null,
      null,
      "TOO_MANY_TOOL_CALLS",
      "TOO_MANY_TOOL_CALLS",
      "TOO_MANY_TOOL_CALLS",
    ]);
  });
});

/** Every encoding of `secret` this suite knows an attacker (or a careless upstream) might show. */
function encodingsOf(secret: string): string[] {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  return [
    secret,
    secret.toUpperCase(),
    encodeURIComponent(secret),
    [...secret].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join(""),
    b64(secret),
    b64(`Bearer ${secret}`),
    Buffer.from(`Bearer ${secret}`).toString("base64url"),
    // What a message cut short in the middle of the key would show.
    secret.slice(0, -4),
    b64(secret).slice(0, -8),
  ];
}

describe("secrets in error texts", () => {
  it("an upstream 401 echoing the key in upper case, %-encoded and as base64 of the header reaches no run error", async () => {
    const apiKey = "sk-proj-Secret0123456789abcdef";
    server = await startTestServer({ env: { OPENAI_API_KEY: apiKey } });
    const echoed = encodingsOf(apiKey);
    server.upstream.enqueue({
      status: 401,
      errorBody: { error: { message: `Incorrect API key provided: ${echoed.join(" / ")}`, type: "invalid_request" } },
    });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const done = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" } });
    expect(done.body.run.stopReason).toBe("error");
    const shown =
      JSON.stringify(done.body) + JSON.stringify((await server.request("GET", `/runs/${done.body.run.id}`)).body);
    expect(shown).toContain("Incorrect API key provided");
    for (const encoding of echoed) {
      expect(shown, encoding).not.toContain(encoding);
      // Nor the part of it that depends on the key only (a base64 text starts with "Bearer ").
      expect(shown, encoding).not.toContain(encoding.slice(12, -3));
    }
  });
});
