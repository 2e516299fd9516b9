/**
 * A run's token and context budgets are stored as 32-bit integers over PostgreSQL: a run with
 * `maxTokens` or `contextMaxChars` past 2,147,483,647 was answered 500 INTERNAL there (SQLite
 * took it), and a server started with DEFAULT_MAX_TOKENS past it failed every run. Now the
 * request is refused 400 on both backends, and such a DEFAULT_MAX_TOKENS stops the start.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import type { BackendName } from "../helpers/store-backends.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const LARGEST = 2_147_483_647;

describe.each<BackendName>(["sqlite", "postgres"])("budgets at the largest a run stores, on %s", (backend) => {
  it("the largest runs; one more is refused 400, never 500", async () => {
    server = await startTestServer({ backend });
    server.upstream.fallback = () => ({ text: "done" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const start = (limits: Record<string, number>) =>
      server?.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi", ...limits } });
    const answers = [];
    for (const name of ["maxTokens", "contextMaxChars"]) {
      for (const value of [LARGEST, LARGEST + 1]) {
        const res = await start({ [name]: value });
        answers.push([name, value, res?.status, res?.body?.run?.stopReason ?? res?.body?.error?.code]);
      }
    }
    expect(answers).toEqual([
      ["maxTokens", LARGEST, 200, "complete"],
      ["maxTokens", LARGEST + 1, 400, "VALIDATION_FAILED"],
      ["contextMaxChars", LARGEST, 200, "complete"],
      ["contextMaxChars", LARGEST + 1, 400, "VALIDATION_FAILED"],
    ]);
  });
});

it("DEFAULT_MAX_TOKENS past the largest a run stores stops the start, naming it", () => {
  expect(() => loadConfig({ DEFAULT_MAX_TOKENS: String(LARGEST + 1) })).toThrow(ConfigError);
  expect(() => loadConfig({ DEFAULT_MAX_TOKENS: String(LARGEST + 1) })).toThrow(/DEFAULT_MAX_TOKENS/);
  expect(loadConfig({ DEFAULT_MAX_TOKENS: String(LARGEST) }).DEFAULT_MAX_TOKENS).toBe(LARGEST);
});
