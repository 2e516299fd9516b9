import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ownerWebhookKey, webhookKey, webhookSecretOf } from "../../src/webhooks/signature.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

/**
 * Two API keys on one server that signs webhooks, and key B's receiver. Any key may point its
 * runs at any URL, so key A, knowing B's receiver's URL, sends it deliveries about runs B
 * never made: signed by the server, they verify with WEBHOOK_SECRET. A receiver that verifies
 * with B's own secret (GET /webhook-secret) must accept B's deliveries and refuse A's.
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

describe("a key's own webhook secret", () => {
  it("B's receiver verifying with B's secret accepts B's deliveries and refuses those key A points at it", async () => {
    server = await startTestServer({
      env: {
        AGENT_API_KEYS: `${KEY_A},${KEY_B}`,
        WEBHOOK_SECRET,
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_POLL_MS: "20",
        WEBHOOK_RETRY_WINDOW_MS: "1000",
      },
    });
    const secretB = (await server.request("GET", "/webhook-secret", { headers: as(KEY_B) })).body.secret as string;
    const receiverB = await startWebhookReceiver(() => 200, secretB);
    const withServerSecret = await startWebhookReceiver(() => 200, WEBHOOK_SECRET);
    receivers.push(receiverB, withServerSecret);

    const finishedRun = async (key: string, url: string) => {
      server?.upstream.enqueue({ text: "done" });
      const session = (await server?.request("POST", "/sessions", { body: { webhook: { url } }, headers: as(key) }))
        ?.body;
      const run = await server?.request("POST", `/sessions/${session.id}/runs?wait=true`, {
        body: { input: "hi" },
        headers: as(key),
      });
      return run?.body.run.id as string;
    };
    const forged = await finishedRun(KEY_A, receiverB.url);
    const own = await finishedRun(KEY_B, receiverB.url);
    const mark = await finishedRun(KEY_A, withServerSecret.url);

    expect((await receiverB.until((d) => d.payload.data.runId === forged)).signatureValid).toBe(false);
    expect((await receiverB.until((d) => d.payload.data.runId === own)).signatureValid).toBe(true);
    // The server's own signature is still on every delivery: receivers that verify with
    // WEBHOOK_SECRET go on working.
    expect((await withServerSecret.until((d) => d.payload.data.runId === mark)).signatureValid).toBe(true);
  });

  it("cannot be derived from WEBHOOK_SECRET and the key's owner id (what logs and receivers of every delivery know)", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, WEBHOOK_SECRET } });
    const secretB = (await server.request("GET", "/webhook-secret", { headers: as(KEY_B) })).body.secret as string;
    const ownerB = createHash("sha256").update(KEY_B).digest("hex").slice(0, 32);
    const serverKey = webhookKey(WEBHOOK_SECRET);
    if (!serverKey) throw new Error("the test's WEBHOOK_SECRET is not one");
    // The derivation the server uses, fed what such a holder has instead of the key's whole digest.
    const guesses = [Buffer.from(ownerB, "hex"), Buffer.from(ownerB, "utf8")].map((material) =>
      webhookSecretOf(ownerWebhookKey(serverKey, material)),
    );
    expect(guesses).not.toContain(secretB);
    expect(secretB).toBe(webhookSecretOf(ownerWebhookKey(serverKey, createHash("sha256").update(KEY_B).digest())));
  });

  it("is not given for a stream token, which opens only its run's events", async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY_A, WEBHOOK_SECRET } });
    server.upstream.enqueue({ text: "done" });
    const session = (await server.request("POST", "/sessions", { body: {}, headers: as(KEY_A) })).body;
    const run = (
      await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
        body: { input: "hi" },
        headers: as(KEY_A),
      })
    ).body.run;
    const token = (await server.request("POST", `/runs/${run.id}/stream-token`, { headers: as(KEY_A) })).body.token;
    const res = await server.request("GET", `/webhook-secret?token=${encodeURIComponent(token)}`);
    expect(res.status).toBe(401);
    expect(JSON.stringify(res.body)).not.toContain("whsec_");
  });
});
