/**
 * One key gives its run an input of ~1 MB and a webhook, and has the model ask to write a file
 * of ~1 MB: the `approval.requested` delivery carries the call's input (~1 MB), the
 * `run.finished` one the run's view, input and all (~1 MB). Then it lists the run's deliveries over and
 * over: a request of a few bytes, an answer of a few hundred. Each listing read every
 * delivery's body, whole, to drop it; now it reads none.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runAwaitingApproval, withKey } from "../helpers/awaiting-approval.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };

let server: TestServer | undefined;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = receiver = undefined;
});

describe("a key listing the webhook deliveries of its run of a 1 MB input", () => {
  it("reads none of their bodies", async () => {
    receiver = await startWebhookReceiver(() => 200);
    const reads = new ReadBytes();
    const s = await startTestServer({
      wrapStore: reads.wrap,
      env: { AGENT_API_KEYS: A, WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_POLL_MS: "20" },
    });
    server = s;
    const { runId } = await runAwaitingApproval(withKey(s, A), {
      session: { webhook: { url: receiver.url, events: ["run.started", "approval.requested", "run.finished"] } },
      input: "w".padEnd(1_000_000, "x"),
      content: "c".repeat(500_000),
    });
    const run = { id: runId };
    s.upstream.enqueue({ text: "done" });
    await s.request("POST", `/runs/${run.id}/approvals/call_w`, { body: { decision: "approve" }, headers: auth });
    await until(
      async () => (await s.request("GET", `/runs/${run.id}/webhooks`, { headers: auth })).body.items,
      (items: { type: string; status: string }[]) => items.length === 3 && items.every((d) => d.status === "delivered"),
      "the deliveries",
    );
    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < 100; i++) {
      const answer = await s.request("GET", `/runs/${run.id}/webhooks`, { headers: auth });
      expect(answer.status).toBe(200);
      expect(answer.body.items.map((d: { type: string }) => d.type)).toEqual([
        "run.started",
        "approval.requested",
        "run.finished",
      ]);
      expect(answer.body.items[2]).not.toHaveProperty("body");
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    console.log(`${Math.round(reads.bytes / 1000)} KB read from the store`);
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(`100 listings of a run's deliveries of 1.5 MB: ${Math.round(cpuMs)} ms of CPU`);
    // The deliveries without their bodies, not 1.5 MB of bodies a listing (150 MB read before).
    expect(reads.bytes).toBeLessThan(100 * 10_000);
  }, 30_000);
});
