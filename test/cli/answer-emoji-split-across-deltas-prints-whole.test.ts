/**
 * An OpenAI-compatible upstream streams text in UTF-16-agnostic pieces: a character outside
 * the BMP (an emoji such as 😀, U+1F600, the surrogate pair \ud83d\ude00) may be split
 * between two stream chunks (`"\ud83d"` then `"\ude00"`, both valid JSON escapes). The
 * server passes each piece on as its own `text.delta`, and the CLI writes each delta to
 * stdout as soon as it arrives (src/cli/terminal-out.ts Outputs.text): a lone surrogate
 * written to a stream is encoded as U+FFFD, so a script piping `agent-server run` gets
 * "Hi �� there" where the committed answer (and GET /sessions/{id}/messages) says
 * "Hi 😀 there". Expected: stdout carries the answer's characters as themselves (README:
 * "streams the model's answer to stdout"); a high surrogate that ends a delta waits for
 * its pair.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../helpers/cli-process.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

it("an emoji whose surrogate pair is split between two deltas reaches stdout whole", async () => {
  server.upstream.enqueue({ text: ["Hi \ud83d", "\ude00 there"] });
  const result = await runCli({ args: ["run", "hello"], env: { AGENT_URL: server.url } });
  expect(result.code).toBe(0);
  expect(result.stdout).not.toContain("\ufffd");
  expect(result.stdout).toBe("Hi \u{1f600} there\n");
});

it("the same on a terminal", async () => {
  server.upstream.enqueue({ text: ["Hi \ud83d", "\ude00 there"] });
  const result = await runCli({ args: ["run", "hello"], env: { AGENT_URL: server.url }, pty: true });
  expect(result.code).toBe(0);
  expect(result.stdout).not.toContain("\ufffd");
  expect(result.stdout).toContain("Hi \u{1f600} there");
});
