import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const base = { OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("stop-condition settings", () => {
  it("LOOP_REPEAT_LIMIT defaults to 3 and refuses 1; the DEFAULT_MAX_* budgets are unset unless given, and named when bad", () => {
    const config = loadConfig(base);
    expect(config.LOOP_REPEAT_LIMIT).toBe(3);
    expect([config.DEFAULT_MAX_TOKENS, config.DEFAULT_MAX_DURATION_MS, config.DEFAULT_MAX_TOOL_CALLS]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(() => loadConfig({ ...base, LOOP_REPEAT_LIMIT: "1" })).toThrow(/LOOP_REPEAT_LIMIT: must be 0 \(off\)/);
    expect(() => loadConfig({ ...base, DEFAULT_MAX_TOKENS: "lots" })).toThrow(/DEFAULT_MAX_TOKENS: must be a whole/);
    expect(() => loadConfig({ ...base, DEFAULT_MAX_DURATION_MS: "0" })).toThrow(/DEFAULT_MAX_DURATION_MS/);
    expect(loadConfig({ ...base, DEFAULT_MAX_TOKENS: "50000" }).DEFAULT_MAX_TOKENS).toBe(50_000);
  });

  it("a run takes the server's defaults for what it leaves out, its own values otherwise, and the session's planning", async () => {
    server = await startTestServer({
      env: { DEFAULT_MAX_TOKENS: "9000", DEFAULT_MAX_TOOL_CALLS: "7", LOOP_REPEAT_LIMIT: "4" },
    });
    const session = (await server.request("POST", "/sessions", { body: { planning: true } })).body;
    server.upstream.enqueue({ text: "a" }, { text: "b" });
    const defaults = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "x" } });
    expect(defaults.body.run).toMatchObject({
      maxTokens: 9000,
      maxToolCalls: 7,
      maxDurationMs: null,
      loopRepeatLimit: 4,
      planning: true,
    });
    const own = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "y", maxTokens: 100, loopRepeatLimit: 0, planning: false, maxDurationMs: 5000 },
    });
    expect(own.body.run).toMatchObject({
      maxTokens: 100,
      maxToolCalls: 7,
      maxDurationMs: 5000,
      loopRepeatLimit: 0,
      planning: false,
    });
  });
});
