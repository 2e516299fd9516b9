/**
 * GET /runs/{id}/steps reports each model request's finish reason: a turn the upstream ended with
 * `finish_reason: "length"` (the reply hit the token limit) or `"content_filter"` fails the run,
 * and its step should still say which finish reason the model gave, so a user can find the turns
 * that were cut (the usage of that same reply is kept in the step; its finish reason is not).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("the step of a turn the upstream ended with a failing finish_reason", () => {
  for (const [finishReason, code] of [
    ["length", "MODEL_LENGTH"],
    ["content_filter", "MODEL_CONTENT_FILTER"],
  ] as const) {
    it(`finish_reason "${finishReason}": the step's model.finishReason is "${finishReason}", not null`, async () => {
      server = await startTestServer();
      const s = server;
      s.upstream.enqueue({ text: "cut off mid", finishReason, usage: { prompt_tokens: 12, completion_tokens: 4096 } });
      const session = (await s.request("POST", "/sessions", { body: {} })).body;
      const ended = await s.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "write" } });
      expect(ended.body.run).toMatchObject({ stopReason: "error", error: { code } });
      const [step] = (await s.request("GET", `/runs/${ended.body.run.id}/steps`)).body.items;
      // The same reply's usage is reported on the step...
      expect(step.model.usage).toEqual({ inputTokens: 12, outputTokens: 4096 });
      // ...and so should be the finish reason it came with.
      expect(step.model.finishReason).toBe(finishReason);
    });
  }
});
