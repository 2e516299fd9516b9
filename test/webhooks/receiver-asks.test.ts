/**
 * What a receiver asks of the sender: the wait of its Retry-After is kept, and credentials in
 * a webhook URL (which a delivery would not send) are refused where the URL is given.
 */
import { afterEach, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { startPlainReceiver } from "../helpers/plain-receiver.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

let server: TestServer | undefined;
const closers: (() => void)[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const close of closers.splice(0)) close();
});

it("a receiver's Retry-After is kept: the next try waits for it, not for the shorter backoff", async () => {
  const tries: number[] = [];
  const receiver = await startPlainReceiver((_request, response) => {
    tries.push(Date.now());
    if (tries.length === 1) response.writeHead(503, { "retry-after": "2" }).end();
    else response.writeHead(200).end();
  });
  closers.push(receiver.close);
  const { url } = receiver;
  server = await startTestServer({
    env: { WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_RETRY_BASE_MS: "200", WEBHOOK_POLL_MS: "20" },
  });
  server.upstream.enqueue({ text: "hi" });
  const session = await server.request("POST", "/sessions", { body: { webhook: { url, events: ["run.finished"] } } });
  await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "x" } });
  await until(
    async () => tries.length,
    (n) => n >= 2,
    "the second try",
  );
  const [first = 0, second = 0] = tries;
  expect(second - first).toBeGreaterThanOrEqual(1900);
});

it("a webhook URL with credentials is refused where it is given: 400 at creation, a configuration error in WEBHOOK_URL", async () => {
  server = await startTestServer({ env: { WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1" } });
  for (const url of ["https://user:pass@hooks.example/hook", "https://token@hooks.example/hook"]) {
    const session = await server.request("POST", "/sessions", { body: { webhook: { url } } });
    expect(session.status, url).toBe(400);
    expect(session.body.error.code).toBe("WEBHOOK_TARGET_REFUSED");
    expect(session.body.error.message).toMatch(/carries credentials/);
  }
  const ok = await server.request("POST", "/sessions", { body: {} });
  const run = await server.request("POST", `/sessions/${ok.body.id}/runs`, {
    body: { input: "x", webhook: { url: "https://user:pass@hooks.example/hook" } },
  });
  expect(run.status).toBe(400);
  expect(() =>
    loadConfig({ OPENAI_API_KEY: "x", WEBHOOK_SECRET, WEBHOOK_URL: "https://user:pass@hooks.example/hook" }),
  ).toThrow(ConfigError);
});
