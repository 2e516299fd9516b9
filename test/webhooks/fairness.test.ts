import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const KEY_A = "key-a-attacker-0123456789";
const KEY_B = "key-b-bystander-0123456789";
const as = (key: string) => ({ authorization: `Bearer ${key}` });

let server: TestServer | undefined;
const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
afterEach(async () => {
  // The tarpit first: its hanging tries end at once, so the worker stops without waiting them out.
  for (const receiver of receivers.splice(0)) await receiver.close();
  await server?.close();
  server = undefined;
});

// Found by an attacker: the worker sent the 16 oldest due deliveries of all keys and waited
// for the whole batch, so one key's flood aimed at a target that never answers held every
// slot for a timeout per batch, and every other key's webhooks waited behind its backlog.
describe("webhook fairness between keys", () => {
  it("key A's flood of deliveries to a tarpit does not hold back key B's run.finished", async () => {
    const tarpit = await startWebhookReceiver(() => "hang");
    const receiver = await startWebhookReceiver();
    receivers.push(tarpit, receiver);
    server = await startTestServer({
      env: {
        AGENT_API_KEYS: `${KEY_A},${KEY_B}`,
        WEBHOOK_SECRET,
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_TIMEOUT_MS: "6000",
        WEBHOOK_POLL_MS: "20",
      },
    });
    // A keeps a run waiting for approval (its one model call), then queues and deletes runs
    // behind it: two deliveries each to the tarpit, no model call.
    server.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "list_files", arguments: "{}" }] }, { text: "b done" });
    const sessionA = await server.request("POST", "/sessions", {
      headers: as(KEY_A),
      body: { approval: { tools: { list_files: "ask" } } },
    });
    const held = await server.request("POST", `/sessions/${sessionA.body.id}/runs`, {
      headers: as(KEY_A),
      body: { input: "hold" },
    });
    expect(held.status).toBe(201);
    for (
      let i = 0;
      i < 100 &&
      (await server.request("GET", `/runs/${held.body.id}`, { headers: as(KEY_A) })).body.status !==
        "awaiting_approval";
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 20));
    const pairs = 80;
    const flood: string[] = [];
    for (let i = 0; i < pairs; i++) {
      const queued = await server.request("POST", `/sessions/${sessionA.body.id}/runs`, {
        headers: as(KEY_A),
        body: {
          input: `q${i}`,
          ifBusy: "enqueue",
          webhook: { url: tarpit.url, events: ["run.queued", "run.finished"] },
        },
      });
      expect(queued.body.status).toBe("queued");
      await server.request("DELETE", `/runs/${queued.body.id}`, { headers: as(KEY_A) });
      flood.push(queued.body.id);
    }

    // B's run ends after the flood: its delivery comes promptly, while A's are still pending.
    // Before the fix: 160 deliveries, 16 per 6 s batch, a minute ahead of it; with fair claims
    // but the batch barrier, it would still wait for A's batch of tarpit sends to time out.
    const sessionB = await server.request("POST", "/sessions", {
      headers: as(KEY_B),
      body: { webhook: { url: receiver.url } },
    });
    const run = await server.request("POST", `/sessions/${sessionB.body.id}/runs?wait=true`, {
      headers: as(KEY_B),
      body: { input: "b" },
    });
    expect(run.body.run.status).toBe("finished");
    const finishedAt = Date.now();
    const delivered = await receiver.until((d) => d.payload.type === "run.finished", 3_000);
    expect(delivered.payload.data.run.id).toBe(run.body.run.id);
    expect(Date.now() - finishedAt).toBeLessThan(3_000);
    const last = await server.request("GET", `/runs/${flood.at(-1)}/webhooks`, { headers: as(KEY_A) });
    expect(last.body.items.map((d: { status: string }) => d.status)).toEqual(["pending", "pending"]);
  });
});
