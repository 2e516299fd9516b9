import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const KEY_A = "key-a-tarpit-owner-0123456789";
const KEY_C = "key-c-tarpit-owner-0123456789";
const KEY_B = "key-b-bystander-0123456789";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
/** How long one try may take: nothing a tarpit holds frees before it. */
const TIMEOUT_MS = 60_000;
/**
 * The bound on B's run.finished, from its run's end. With slots free it is sent within a poll
 * (20 ms) to a receiver on 127.0.0.1: 5 s leaves a loaded CI machine 100 times that. Without
 * free slots it cannot come before a tarpit's try times out (TIMEOUT_MS), 12 times the bound:
 * the test fails by what the worker does, not by how fast the machine is.
 */
const BOUND_MS = 5_000;

let server: TestServer | undefined;
const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
afterEach(async () => {
  // The tarpits first: their hanging tries end at once, so the worker stops without waiting them out.
  for (const receiver of receivers.splice(0)) await receiver.close();
  await server?.close();
  server = undefined;
});

// Found by an attacker: two keys whose receivers accept and never answer took 8 slots each,
// all 16, and held them for WEBHOOK_TIMEOUT_MS at a time; as each slot freed, the older backlog
// of the tarpit keys took it again, and every other key's deliveries waited while they kept
// producing runs.
describe("keys whose receivers never answer", () => {
  it("two keys flooding runs at tarpits hold one slot each: key B's run.finished arrives within 5 s", async () => {
    const tarpits = [await startWebhookReceiver(() => "hang"), await startWebhookReceiver(() => "hang")];
    const receiver = await startWebhookReceiver();
    receivers.push(...tarpits, receiver);
    server = await startTestServer({
      env: {
        AGENT_API_KEYS: `${KEY_A},${KEY_C},${KEY_B}`,
        WEBHOOK_SECRET,
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_POLL_MS: "20",
      },
    });
    const live = server;
    // Each attacker keeps a run waiting for approval (its one model call), then queues and
    // deletes runs behind it: two deliveries to its tarpit each, no model call.
    const ask = { toolCalls: [{ id: "call_1", name: "list_files", arguments: "{}" }] };
    live.upstream.enqueue(ask, ask, { text: "b done" });
    const attackers: { key: string; sessionId: string; url: string }[] = [];
    for (const [key, tarpit] of [
      [KEY_A, tarpits[0]],
      [KEY_C, tarpits[1]],
    ] as const) {
      const session = await live.request("POST", "/sessions", {
        headers: as(key),
        body: { approval: { tools: { list_files: "ask" } } },
      });
      const held = await live.request("POST", `/sessions/${session.body.id}/runs`, {
        headers: as(key),
        body: { input: "hold" },
      });
      for (
        let i = 0;
        i < 200 &&
        (await live.request("GET", `/runs/${held.body.id}`, { headers: as(key) })).body.status !== "awaiting_approval";
        i++
      )
        await new Promise((resolve) => setTimeout(resolve, 20));
      attackers.push({ key, sessionId: session.body.id as string, url: tarpit?.url as string });
    }
    let flooding = true;
    const runs: string[] = [];
    const flood = async ({ key, sessionId, url }: (typeof attackers)[number]) => {
      while (flooding) {
        const queued = await live.request("POST", `/sessions/${sessionId}/runs`, {
          headers: as(key),
          body: { input: "q", ifBusy: "enqueue", webhook: { url, events: ["run.queued", "run.finished"] } },
        });
        expect(queued.body.status).toBe("queued");
        await live.request("DELETE", `/runs/${queued.body.id}`, { headers: as(key) });
        if (key === KEY_A) runs.push(queued.body.id);
      }
    };
    const flooders = attackers.map(flood);
    let flooded = 0;
    try {
      // Both tarpits hold tries, and the worker has had a few polls to give them every slot it would.
      for (const tarpit of tarpits) await tarpit?.until(() => true, BOUND_MS);
      while (runs.length < 20) await new Promise((resolve) => setTimeout(resolve, 20));

      // B's run ends while A and C keep flooding.
      const sessionB = await live.request("POST", "/sessions", {
        headers: as(KEY_B),
        body: { webhook: { url: receiver.url } },
      });
      const run = await live.request("POST", `/sessions/${sessionB.body.id}/runs?wait=true`, {
        headers: as(KEY_B),
        body: { input: "b" },
      });
      expect(run.body.run.status).toBe("finished");
      const finishedAt = Date.now();
      const delivered = await receiver.until((d) => d.payload.type === "run.finished", BOUND_MS);
      expect(delivered.payload.data.run.id).toBe(run.body.run.id);
      expect(Date.now() - finishedAt).toBeLessThan(BOUND_MS);
      flooded = runs.length;
    } finally {
      flooding = false;
      await Promise.all(flooders);
    }

    // The attack was on: A's deliveries wait behind its one try, which its tarpit holds.
    expect(flooded).toBeGreaterThanOrEqual(20);
    const last = await live.request("GET", `/runs/${runs.at(-1)}/webhooks`, { headers: as(KEY_A) });
    expect(last.body.items.map((d: { status: string }) => d.status)).toEqual(["pending", "pending"]);
    expect(tarpits.map((tarpit) => tarpit?.received.length)).toEqual([1, 1]);
  });
});
