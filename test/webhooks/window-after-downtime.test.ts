/**
 * A delivery whose retry window closed while the server was down: it was sent once after the
 * restart anyway (the window was checked only when a try failed), a day late by the defaults.
 * It is now given up untried, `failed` with the reason.
 */
import { afterEach, expect, it } from "vitest";
import { startPlainReceiver } from "../helpers/plain-receiver.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const servers: TestServer[] = [];
const closers: (() => void)[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const close of closers.splice(0)) close();
});

it("a delivery whose window closed during a downtime is failed untried after the restart, not sent late", async () => {
  let failing = true;
  const received: number[] = [];
  const receiver = await startPlainReceiver((_request, response) => {
    received.push(Date.now());
    response.writeHead(failing ? 503 : 200).end();
  });
  closers.push(receiver.close);
  const env = {
    WEBHOOK_SECRET,
    WEBHOOK_ALLOW_PRIVATE: "1",
    WEBHOOK_RETRY_BASE_MS: "1000",
    WEBHOOK_RETRY_WINDOW_MS: "2000",
    WEBHOOK_POLL_MS: "20",
  };
  const first = await startTestServer({ env });
  first.upstream.fallback = () => ({ text: "done" });
  const session = (
    await first.request("POST", "/sessions", { body: { webhook: { url: receiver.url, events: ["run.finished"] } } })
  ).body;
  const run = (await first.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" } })).body;
  const listed = async (server: TestServer) => (await server.request("GET", `/runs/${run.run.id}/webhooks`)).body;
  await until(
    () => listed(first),
    (page) => page.items[0]?.attempts.length === 1,
    "the first try failed",
  );
  await first.close({ keepDir: true });
  // Down longer than the window; the receiver has recovered meanwhile.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  failing = false;
  const second = await startTestServer({ env, dir: first.dir, upstream: first.upstream });
  servers.push(second);
  const delivery = await until(
    async () => (await listed(second)).items[0],
    (d) => d !== undefined && d.status !== "pending",
    "the delivery settled",
  );
  expect(received).toHaveLength(1);
  expect(delivery).toMatchObject({ status: "failed", attempts: [{ statusCode: 503 }] });
  expect(delivery.reason).toMatch(/not sent within WEBHOOK_RETRY_WINDOW_MS/);
});
