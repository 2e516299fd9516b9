/**
 * A receiver that fails (503) while many deliveries wait for it: each delivery backs off on its
 * own, so their tries came due together and it got the whole backlog at once after every step
 * (150 tries within one second for 150 runs). It now gets one try per step of the backoff until
 * it answers 2xx; then the backlog flows.
 */
import { afterEach, expect, it } from "vitest";
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

it("a failing receiver gets one try per backoff step, not its whole backlog; once it answers, the backlog flows", async () => {
  let failing = true;
  const tries: number[] = [];
  const delivered = new Set<string>();
  const receiver = await startPlainReceiver((request, response) => {
    tries.push(Date.now());
    if (failing) response.writeHead(503).end();
    else {
      delivered.add(String(request.headers["webhook-id"]));
      response.writeHead(200).end();
    }
  });
  closers.push(receiver.close);
  const { url } = receiver;
  server = await startTestServer({
    env: { WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_RETRY_BASE_MS: "1000", WEBHOOK_POLL_MS: "20" },
  });
  const s = server;
  s.upstream.fallback = () => ({ text: "done" });
  const runs = 20;
  const session = (await s.request("POST", "/sessions", { body: { webhook: { url, events: ["run.finished"] } } })).body;
  for (let i = 0; i < runs; i++) {
    await s.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: `run ${i}` } });
  }
  const from = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const during = tries.filter((at) => at >= from - 1000).length;
  // Without the wait per receiver: the 20 deliveries' tries every second, ~60 in the window.
  expect(during).toBeLessThanOrEqual(8);
  failing = false;
  await until(
    async () => delivered.size,
    (n) => n === runs,
    "every delivery once the receiver answers",
  );
});
