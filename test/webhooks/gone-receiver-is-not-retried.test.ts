/**
 * Standard Webhooks (which the README says every delivery follows): "410 Gone: This is an
 * indication by the server that it's no longer interested in receiving webhooks from this
 * source. Sender should disable the webhook endpoint, and stop sending it messages."
 */
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

let server: TestServer | undefined;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = receiver = undefined;
});

it("a receiver that answers 410 Gone is not tried again: the delivery ends failed after that one try, saying why", async () => {
  receiver = await startWebhookReceiver(() => 410);
  server = await startTestServer({
    env: {
      WEBHOOK_SECRET,
      WEBHOOK_ALLOW_PRIVATE: "1",
      WEBHOOK_RETRY_BASE_MS: "50",
      WEBHOOK_RETRY_MAX_MS: "100",
      WEBHOOK_RETRY_WINDOW_MS: "3000",
      WEBHOOK_POLL_MS: "20",
    },
  });
  server.upstream.enqueue({ text: "done" });
  const session = await server.request("POST", "/sessions", {
    body: { webhook: { url: receiver.url, events: ["run.finished"] } },
  });
  const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "hi" } });
  expect(run.status).toBe(200);
  const runId = run.body.run.id as string;
  await receiver.until((d) => d.payload.data.runId === runId && d.answered === 410);
  // Settled either way within the 3 s window: failed after its one 410, or given up at the window's end.
  const [delivery] = await until(
    async () => (await server?.request("GET", `/runs/${runId}/webhooks`))?.body.items,
    (items) => items?.length === 1 && items[0].status !== "pending",
    "the delivery to settle",
  );
  expect(delivery.status).toBe("failed");
  expect(delivery.attempts.map((a: { statusCode: number | null }) => a.statusCode)).toEqual([410]);
  expect(delivery.reason).toBe("the receiver answered 410 Gone: it wants no more deliveries");
  expect(receiver.received.filter((d) => d.payload.data.runId === runId)).toHaveLength(1);
  // Counted as given up, for its own reason (not the window's).
  const givenUp = await server.ctx.metrics.registry.getSingleMetric("agent_webhook_deliveries_given_up_total")?.get();
  expect(givenUp?.values.map((v) => [v.labels.reason, v.value])).toEqual([["gone", 1]]);
});
