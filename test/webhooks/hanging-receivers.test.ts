/**
 * Keys whose webhook receivers hang, flooding runs, as attackers would act, while another key
 * (B) waits for its run.finished: the worker's send slots must not all go to the hanging
 * receivers. Each test bounds B's delivery so that it fails by what the worker does, not by how
 * fast the machine is (see each BOUND_MS).
 */
import { afterEach, describe, expect, it } from "vitest";
import { STUCK_MS, WEBHOOK_SLOTS_PER_OWNER } from "../../src/webhooks/worker-limits.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const KEY_A = "key-a-hanging-owner-0123456789";
const KEY_C = "key-c-hanging-owner-0123456789";
const KEY_B = "key-b-bystander-0123456789";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
/** How long one try may take: nothing a hanging receiver holds frees before it. */
const TIMEOUT_MS = 60_000;

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

let server: TestServer | undefined;
const receivers: Receiver[] = [];
afterEach(async () => {
  // The hanging receivers first: their tries end at once, so the worker stops without waiting them out.
  for (const receiver of receivers.splice(0)) await receiver.close();
  await server?.close();
  server = undefined;
});

/**
 * A server with keys A, C and B, and A and C flooding runs whose deliveries go to `tarpits`:
 * each keeps a run waiting for approval (its one model call), then queues and deletes runs
 * behind it (two deliveries each, no model call) until `stop`. `runsOfA`: A's flooded runs.
 */
async function floodingAttackers(tarpits: Receiver[]) {
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
  const runsOfA: string[] = [];
  const flood = async ({ key, sessionId, url }: (typeof attackers)[number]) => {
    while (flooding) {
      const queued = await live.request("POST", `/sessions/${sessionId}/runs`, {
        headers: as(key),
        body: { input: "q", ifBusy: "enqueue", webhook: { url, events: ["run.queued", "run.finished"] } },
      });
      expect(queued.body.status).toBe("queued");
      await live.request("DELETE", `/runs/${queued.body.id}`, { headers: as(key) });
      if (key === KEY_A) runsOfA.push(queued.body.id);
    }
  };
  const flooders = attackers.map(flood);
  return {
    live,
    runsOfA,
    stop: async () => {
      flooding = false;
      await Promise.all(flooders);
    },
    /** B's run ends while A and C flood: its run.finished must reach B's receiver within `boundMs`. */
    bDelivered: async (boundMs: number) => {
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
      const delivered = await receiver.until((d) => d.payload.type === "run.finished", boundMs);
      expect(delivered.payload.data.run.id).toBe(run.body.run.id);
      expect(Date.now() - finishedAt).toBeLessThan(boundMs);
    },
  };
}

// Found by an attacker: two keys whose receivers accept and never answer took 8 slots each,
// all 16, and held them for WEBHOOK_TIMEOUT_MS at a time; as each slot freed, the older backlog
// of the tarpit keys took it again, and every other key's deliveries waited while they kept
// producing runs.
describe("keys whose receivers never answer", () => {
  /**
   * With slots free B's delivery is sent within a poll (20 ms) to a receiver on 127.0.0.1: 5 s
   * leaves a loaded CI machine 100 times that. Without free slots it cannot come before a
   * tarpit's try times out (TIMEOUT_MS), 12 times the bound.
   */
  const BOUND_MS = 5_000;

  it("two keys flooding runs at tarpits hold one slot each: key B's run.finished arrives within 5 s", async () => {
    const tarpits = [await startWebhookReceiver(() => "hang"), await startWebhookReceiver(() => "hang")];
    const attack = await floodingAttackers(tarpits);
    let flooded = 0;
    try {
      // Both tarpits hold tries, and the worker has had a few polls to give them every slot it would.
      for (const tarpit of tarpits) await tarpit?.until(() => true, BOUND_MS);
      while (attack.runsOfA.length < 20) await new Promise((resolve) => setTimeout(resolve, 20));
      await attack.bDelivered(BOUND_MS);
      flooded = attack.runsOfA.length;
    } finally {
      await attack.stop();
    }

    // The attack was on: A's deliveries wait behind its one try, which its tarpit holds.
    expect(flooded).toBeGreaterThanOrEqual(20);
    const last = await attack.live.request("GET", `/runs/${attack.runsOfA.at(-1)}/webhooks`, { headers: as(KEY_A) });
    expect(last.body.items.map((d: { status: string }) => d.status)).toEqual(["pending", "pending"]);
    expect(tarpits.map((tarpit) => tarpit?.received.length)).toEqual([1, 1]);
  });
});

// Found by review: a 2xx, however slow, grew a key's share and cleared "failing". A receiver that
// answered quickly a few times (share 8) and then hung held 8 slots until WEBHOOK_TIMEOUT_MS; two
// such keys held all 16, every other key's deliveries waited a whole timeout, and they could
// repeat it (a few quick answers, then hang). A send unanswered past STUCK_MS now leaves the pool
// and its key claims no more until it ends.
describe("keys whose receivers answer quickly, then hang", () => {
  /** The deliveries each attacker's receiver answers at once (enough to grow its share to the most), before it hangs. */
  const QUICK = WEBHOOK_SLOTS_PER_OWNER + 2;
  /**
   * Fixed, the attackers' hanging sends leave the pool within STUCK_MS (1 s) and B's is sent
   * within a poll (20 ms) after: 15 s leaves a loaded machine over 10 times that. Unfixed, the
   * two attackers hold all 16 slots until a try times out (TIMEOUT_MS, 4 times the bound).
   */
  const BOUND_MS = 15_000;

  /** A receiver that answers its first QUICK deliveries 200 at once, then never answers. */
  const adaptiveTarpit = () => {
    let answered = 0;
    return startWebhookReceiver(() => (answered++ < QUICK ? 200 : "hang"));
  };

  it("two such keys flooding runs hold the pool for STUCK_MS at most: key B's run.finished arrives within 15 s", async () => {
    expect(STUCK_MS * 10).toBeLessThanOrEqual(BOUND_MS);
    const tarpits = [await adaptiveTarpit(), await adaptiveTarpit()];
    const attack = await floodingAttackers(tarpits);
    try {
      // Each attacker's share has grown to the most on quick answers, and that many of its tries now hang.
      for (const tarpit of tarpits)
        await tarpit?.until(() => (tarpit?.received.length ?? 0) >= QUICK + WEBHOOK_SLOTS_PER_OWNER, BOUND_MS);
      await attack.bDelivered(BOUND_MS);
    } finally {
      await attack.stop();
    }

    // A key with a stuck send claims no more: each attacker has only the tries it had under way when they hung.
    expect(tarpits.map((tarpit) => tarpit?.received.length)).toEqual([
      QUICK + WEBHOOK_SLOTS_PER_OWNER,
      QUICK + WEBHOOK_SLOTS_PER_OWNER,
    ]);
  });
});
