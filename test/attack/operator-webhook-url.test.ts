/**
 * The operator's receiver (WEBHOOK_URL) as a tenant would look for it: on a server with API
 * keys, a key whose run goes to the server's default receiver lists the run's deliveries. The
 * URL, which may carry the operator's token, is not shown to it; its own receivers are.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const KEY = "key-b-0123456789abcdef";
const as = { authorization: `Bearer ${KEY}` };
let server: TestServer | undefined;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = receiver = undefined;
});

describe("the operator's WEBHOOK_URL", () => {
  it("is not shown to an API key in its run's deliveries; a receiver the key set is", async () => {
    receiver = await startWebhookReceiver();
    const operatorUrl = `${receiver.url}?token=operator-secret-token`;
    server = await startTestServer({
      env: {
        AGENT_API_KEYS: KEY,
        WEBHOOK_SECRET,
        WEBHOOK_URL: operatorUrl,
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_POLL_MS: "20",
      },
    });
    const session = (await server.request("POST", "/sessions", { body: {}, headers: as })).body;
    const deliveries = async (webhook?: { url: string }) => {
      server?.upstream.enqueue({ text: "done" });
      const run = await server?.request("POST", `/sessions/${session.id}/runs?wait=true`, {
        body: { input: "hi", ...(webhook ? { webhook } : {}) },
        headers: as,
      });
      await receiver?.until((d) => d.payload.data?.runId === run?.body.run.id);
      return (await server?.request("GET", `/runs/${run?.body.run.id}/webhooks`, { headers: as }))?.body;
    };
    const toOperator = await deliveries();
    expect(toOperator.items).toHaveLength(1);
    expect(toOperator.items[0]).toMatchObject({ type: "run.finished", url: null });
    expect(JSON.stringify(toOperator)).not.toContain("operator-secret-token");
    const own = `${receiver.url}?mine`;
    expect((await deliveries({ url: own })).items[0]).toMatchObject({ type: "run.finished", url: own });
  });
});
