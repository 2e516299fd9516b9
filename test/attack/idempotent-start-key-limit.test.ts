/**
 * Two copies of a start with one Idempotency-Key at once (a client's retry racing its first
 * request) get one run, also when the key's run limit (MAX_RUNS_PER_KEY) is reached by that very
 * run: the second copy's insert is refused as `owner_runs` before the key is seen, and it was
 * answered 429 TOO_MANY_RUNS instead of the run its first copy started.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY = "key-limit-0123456789abcdef";
const headers = (idempotencyKey: string) => ({ authorization: `Bearer ${KEY}`, "idempotency-key": idempotencyKey });

describe("an idempotent start racing its copy at the key's run limit", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY, MAX_RUNS_PER_KEY: "1" } });
    // Every run asks to run a shell command, and waits for its approval: it stays unfinished.
    server.upstream.fallback = () => ({
      toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi" }) }],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("both copies get the one run, neither is refused as over the key's limit", async () => {
    for (let round = 0; round < 3; round++) {
      const session = (
        await server.request("POST", "/sessions", { body: {}, headers: { authorization: `Bearer ${KEY}` } })
      ).body;
      const request = () =>
        server.request("POST", `/sessions/${session.id}/runs`, {
          body: { input: "C" },
          headers: headers(`limit-${round}`),
        });
      const answers = await Promise.all([request(), request()]);
      expect(answers.map((a) => [a.status, a.body.error?.code ?? null])).toEqual([
        [201, null],
        [201, null],
      ]);
      const [a, b] = answers.map((answer) => answer.body.id as string);
      expect(a).toBe(b);
      // The key's one run ends, so the next round has room again.
      await server.request("DELETE", `/runs/${a}`, { headers: { authorization: `Bearer ${KEY}` } });
      for (let i = 0; i < 100; i++) {
        const run = (await server.request("GET", `/runs/${a}`, { headers: { authorization: `Bearer ${KEY}` } })).body;
        if (run.status === "finished") break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });
});
