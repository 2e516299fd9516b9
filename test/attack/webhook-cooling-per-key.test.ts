import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

/**
 * Key B's receiver verifies with B's own secret (GET /webhook-secret), as the README tells a
 * receiver on a shared server to: it answers 401 to deliveries about other keys' runs. Key A,
 * knowing that URL, points one of its own runs at it. A's delivery fails (401, rightly), and
 * the worker holds back A's other deliveries to that URL for A's backoff step (up to
 * WEBHOOK_RETRY_MAX_MS, an hour, as A's retries back off): it must not hold back B's, whose
 * receiver answers them (cooling-targets.ts waits by owner and URL). The README promises a
 * failing key "delays only their own deliveries".
 */
const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });

let server: TestServer | undefined;
const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
afterEach(async () => {
  await server?.close();
  for (const receiver of receivers.splice(0)) await receiver.close();
  server = undefined;
});

it("key A's refused deliveries to key B's receiver do not hold back B's own deliveries there", async () => {
  server = await startTestServer({
    env: {
      AGENT_API_KEYS: `${KEY_A},${KEY_B}`,
      WEBHOOK_SECRET,
      WEBHOOK_ALLOW_PRIVATE: "1",
      WEBHOOK_POLL_MS: "20",
      // A's first retry step: 60 s (the default 5 s doubles to an hour as A's retries go on).
      WEBHOOK_RETRY_BASE_MS: "60000",
    },
  });
  const secretB = (await server.request("GET", "/webhook-secret", { headers: as(KEY_B) })).body.secret as string;
  const receiverB = await startWebhookReceiver(() => 200, secretB);
  receivers.push(receiverB);

  const finishedRun = async (key: string) => {
    server?.upstream.enqueue({ text: "done" });
    const session = (
      await server?.request("POST", "/sessions", { body: { webhook: { url: receiverB.url } }, headers: as(key) })
    )?.body;
    const run = await server?.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "hi" },
      headers: as(key),
    });
    return run?.body.run.id as string;
  };

  // A's delivery to B's receiver is refused (401) and recorded as a failed try.
  const forged = await finishedRun(KEY_A);
  await until(
    async () => (await server?.request("GET", `/runs/${forged}/webhooks`, { headers: as(KEY_A) }))?.body.items,
    (items: { attempts: { statusCode: number | null }[] }[]) => items[0]?.attempts[0]?.statusCode === 401,
    "A's try to be recorded",
  );

  // B's own run ends: its delivery should be sent at once ("it is sent at once").
  const started = Date.now();
  const own = await finishedRun(KEY_B);
  const delivered = await receiverB
    .until((d) => d.payload.data.runId === own, 5000)
    .then(() => Date.now() - started)
    .catch(() => null);
  const listed = (await server.request("GET", `/runs/${own}/webhooks`, { headers: as(KEY_B) })).body.items;
  expect(
    delivered,
    `B's delivery not sent within 5 s; listed as ${JSON.stringify(listed.map((d: object) => ({ ...d, id: undefined })))}`,
  ).not.toBeNull();
});
