import { afterEach, describe, expect, it } from "vitest";
import { STOP_GRACE_MS } from "../../src/webhooks/worker-limits.js";
import { call } from "../contract/support.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const ENV = {
  WEBHOOK_SECRET,
  WEBHOOK_ALLOW_PRIVATE: "1",
  WEBHOOK_RETRY_BASE_MS: "50",
  WEBHOOK_POLL_MS: "20",
};

let server: TestServer | undefined;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = receiver = undefined;
});

async function deliveriesUntil(runId: string, done: (items: { status: string }[]) => boolean) {
  for (let i = 0; i < 200; i++) {
    const res = await server?.request("GET", `/runs/${runId}/webhooks`);
    if (res && done(res.body.items)) return res.body.items;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("the deliveries did not settle");
}

/** The server's values of a labelled counter, by its one label's value. */
async function counted(name: string): Promise<Record<string, number>> {
  const metric = await server?.ctx.metrics.registry.getSingleMetric(name)?.get();
  return Object.fromEntries((metric?.values ?? []).map((v) => [Object.values(v.labels)[0] as string, v.value]));
}

describe("webhooks", () => {
  it("posts a pending approval and a run's end, signed, retried after the receiver's 500s, each try listed", async () => {
    receiver = await startWebhookReceiver((_delivery, tryNumber) => (tryNumber <= 2 ? 500 : 200));
    server = await startTestServer({ env: ENV });
    server.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "list_files", arguments: "{}" }] }, { text: "done" });
    const session = await server.request("POST", "/sessions", {
      body: { approval: { tools: { list_files: "ask" } }, webhook: { url: receiver.url } },
    });
    expect(session.status).toBe(201);
    expect(session.body.webhook).toEqual({ url: receiver.url, events: ["run.finished", "approval.requested"] });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "list" } });
    expect(run.status).toBe(201);

    const asked = await receiver.until((d) => d.payload.type === "approval.requested" && d.answered === 200);
    expect(asked.payload.data).toMatchObject({
      runId: run.body.id,
      sessionId: session.body.id,
      toolCallId: "call_1",
      tool: "list_files",
    });
    await server.request("POST", `/runs/${run.body.id}/approvals/call_1`, { body: { decision: "approve" } });
    const finished = await receiver.until((d) => d.payload.type === "run.finished" && d.answered === 200);
    expect(finished.payload.data.run).toMatchObject({ id: run.body.id, status: "finished", stopReason: "complete" });

    expect(receiver.received.every((d) => d.signatureValid)).toBe(true);
    // A retry is the same delivery: the same webhook-id, three tries each.
    for (const id of [asked.id, finished.id]) {
      expect(receiver.received.filter((d) => d.id === id).map((d) => d.answered)).toEqual([500, 500, 200]);
    }
    await deliveriesUntil(run.body.id, (list) => list.every((d) => d.status === "delivered"));
    // As the spec describes it.
    const { items } = (await call(server, "GET", "/runs/{id}/webhooks", { params: { id: run.body.id } })).body;
    await call(server, "GET", "/sessions/{id}", { params: { id: session.body.id } });
    expect(items).toMatchObject([
      { id: asked.id, type: "approval.requested", url: receiver.url, status: "delivered", nextAttemptAt: null },
      { id: finished.id, type: "run.finished", status: "delivered", nextAttemptAt: null },
    ]);
    expect(items[0].attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500, 200]);
    // The metrics count each try by its outcome.
    expect(await counted("agent_webhook_tries_total")).toEqual({ failed: 4, delivered: 2 });
    expect(await counted("agent_webhook_deliveries_given_up_total")).toEqual({});
  });

  it("a run's own target and events replace its session's; without either, WEBHOOK_URL gets the run's end", async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ env: { ...ENV, WEBHOOK_URL: `${receiver.url}?default` } });
    server.upstream.enqueue({ text: "one" }, { text: "two" });
    const session = await server.request("POST", "/sessions", { body: {} });
    const own = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      body: { input: "a", webhook: { url: `${receiver.url}?own`, events: ["run.started"] } },
    });
    const plain = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "b" } });
    await receiver.until((d) => d.payload.data.runId === plain.body.run.id);
    await receiver.until((d) => d.payload.data.runId === own.body.run.id);
    const types = (runId: string) =>
      (receiver?.received ?? []).filter((d) => d.payload.data.runId === runId).map((d) => d.payload.type);
    expect(types(own.body.run.id)).toEqual(["run.started"]);
    expect(types(plain.body.run.id)).toEqual(["run.finished"]);
    const listed = await server.request("GET", `/runs/${own.body.run.id}/webhooks`);
    expect(listed.body.items.map((d: { url: string }) => d.url)).toEqual([`${receiver.url}?own`]);
  });

  it("refuses a private or loopback target: a literal address at creation (400), a name that resolves to one at delivery", async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ env: { ...ENV, WEBHOOK_ALLOW_PRIVATE: "0" } });
    for (const url of [
      "http://127.0.0.1:9/hook",
      "http://[::1]/hook",
      "http://[::ffff:127.0.0.1]/",
      "http://10.1.2.3/",
      "http://169.254.169.254/latest/meta-data",
      "http://0.0.0.0/",
    ]) {
      const res = await server.request("POST", "/sessions", { body: { webhook: { url } } });
      expect(res.status, url).toBe(400);
      expect(res.body.error.code).toBe("WEBHOOK_TARGET_REFUSED");
    }
    const notHttp = await server.request("POST", "/sessions", { body: { webhook: { url: "file:///etc/passwd" } } });
    expect(notHttp.status).toBe(400);

    // `localhost` is a name: accepted here, refused on the address it resolves to.
    server.upstream.enqueue({ text: "hi" });
    const session = await server.request("POST", "/sessions", {
      body: { webhook: { url: `http://localhost:${receiver.port}/hook` } },
    });
    expect(session.status).toBe(201);
    const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "hi" } });
    const [delivery] = await deliveriesUntil(
      run.body.run.id,
      (list) => list.length === 1 && list[0]?.status !== "pending",
    );
    expect(delivery.status).toBe("failed");
    expect(delivery.attempts[0].error).toMatch(/private or loopback/);
    expect(delivery.reason).toMatch(/^target refused: .*private or loopback/);
    // The name is the key's own; the address it resolves to is not told (no map of the internal network).
    expect(JSON.stringify(delivery)).not.toContain("127.0.0.1");
    expect(receiver.received).toEqual([]);
    expect(await counted("agent_webhook_tries_total")).toEqual({ refused: 1 });
    expect(await counted("agent_webhook_deliveries_given_up_total")).toEqual({ refused: 1 });
  });

  it("refuses a webhook when the server has no WEBHOOK_SECRET (nothing is sent unsigned)", async () => {
    server = await startTestServer();
    const res = await server.request("POST", "/sessions", { body: { webhook: { url: "https://example.com/h" } } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("WEBHOOK_NOT_CONFIGURED");
  });

  it("a queued run posts run.queued, then run.started only when it actually starts, signed", async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ env: ENV });
    let release!: () => void;
    server.upstream.enqueue({ text: "first", gate: new Promise<void>((r) => (release = r)) }, { text: "second" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body.id;
    const active = await server.request("POST", `/sessions/${session}/runs`, { body: { input: "first" } });
    expect(active.status).toBe(201);
    const queued = await server.request("POST", `/sessions/${session}/runs`, {
      body: {
        input: "second",
        ifBusy: "enqueue",
        webhook: { url: receiver.url, events: ["run.queued", "run.started"] },
      },
    });
    expect(queued.body.status).toBe("queued");
    const announced = await receiver.until((d) => d.payload.type === "run.queued");
    expect(announced.signatureValid).toBe(true);
    expect(announced.payload.data).toEqual({ runId: queued.body.id, sessionId: session });
    // Still held behind the active run: nothing says it started.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.received.map((d) => d.payload.type)).toEqual(["run.queued"]);
    release();
    const started = await receiver.until((d) => d.payload.type === "run.started");
    expect(started.payload.data).toEqual({ runId: queued.body.id, sessionId: session });
    expect(Date.parse(started.payload.timestamp)).toBeGreaterThanOrEqual(
      Date.parse((await server.request("GET", `/runs/${active.body.id}`)).body.finishedAt),
    );
    expect(receiver.received.map((d) => [d.payload.type, d.signatureValid])).toEqual([
      ["run.queued", true],
      ["run.started", true],
    ]);
  });

  it("a delivery with no 2xx within its window is failed, with a reason naming WEBHOOK_RETRY_WINDOW_MS", async () => {
    receiver = await startWebhookReceiver(() => 503);
    // Tried at once and 400 ms later (on a slow machine, maybe not); the next try would be 1,200 ms
    // after its event, past the window.
    server = await startTestServer({ env: { ...ENV, WEBHOOK_RETRY_BASE_MS: "400", WEBHOOK_RETRY_WINDOW_MS: "1000" } });
    server.upstream.enqueue({ text: "hi" });
    const session = await server.request("POST", "/sessions", { body: { webhook: { url: receiver.url } } });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "hi" } });
    await deliveriesUntil(run.body.run.id, (list) => list[0]?.status === "failed");
    const listed = await call(server, "GET", "/runs/{id}/webhooks", { params: { id: run.body.run.id } });
    expect(listed.body.items).toEqual([
      expect.objectContaining({
        status: "failed",
        attempts: expect.arrayContaining([expect.objectContaining({ statusCode: 503 })]),
        reason: "no 2xx answer within WEBHOOK_RETRY_WINDOW_MS (1000 ms) of its event",
      }),
    ]);
    expect(await counted("agent_webhook_deliveries_given_up_total")).toEqual({ window: 1 });
  });
});

describe("a shutdown while a receiver holds a try", () => {
  it("does not wait out WEBHOOK_TIMEOUT_MS: the try is cut, nothing is recorded, and the delivery is tried again after a restart", async () => {
    let answer: number | "hang" = "hang";
    receiver = await startWebhookReceiver(() => answer);
    server = await startTestServer({ env: { ...ENV, WEBHOOK_TIMEOUT_MS: "60000" } });
    server.upstream.enqueue({ text: "done" });
    const session = await server.request("POST", "/sessions", {
      body: { webhook: { url: receiver.url, events: ["run.finished"] } },
    });
    const waited = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      body: { input: "hi" },
    });
    expect(waited.body.run.status).toBe("finished");
    const run = { body: waited.body.run };
    const hung = receiver;
    for (let i = 0; i < 200 && hung.received.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(hung.received).toHaveLength(1);

    // The server stops while the receiver holds the try: within SHUTDOWN's bounds, not the try's 60 s.
    const started = performance.now();
    const dir = server.dir;
    const metrics = server.ctx.metrics;
    await server.close({ keepDir: true });
    const tries = (await metrics.registry.getSingleMetric("agent_webhook_tries_total")?.get())?.values ?? [];
    const stopping = Object.fromEntries(tries.map((v) => [v.labels.outcome as string, v.value]));
    server = undefined;
    expect(performance.now() - started).toBeLessThan(STOP_GRACE_MS + 3000);
    expect(stopping).toEqual({ cut: 1 });

    // Nothing was recorded of the cut try; after its lease, the next start sends it again.
    answer = 200;
    server = await startTestServer({ env: { ...ENV, WEBHOOK_TIMEOUT_MS: "100" }, dir });
    const items = await deliveriesUntil(run.body.id, (all) => all[0]?.status === "delivered");
    expect(items[0].attempts.map((a: { statusCode: number | null }) => a.statusCode)).toEqual([200]);
    expect(hung.received.length).toBeGreaterThanOrEqual(2);
  });
});

/**
 * The operator's receiver (WEBHOOK_URL) as a tenant would look for it: on a server with API
 * keys, a key whose run goes to the server's default receiver lists the run's deliveries. The
 * URL, which may carry the operator's token, is not shown to it; its own receivers are.
 */
describe("the operator's WEBHOOK_URL", () => {
  const KEY = "key-b-0123456789abcdef";
  const as = { authorization: `Bearer ${KEY}` };
  it("is not shown to an API key in its run's deliveries; a receiver the key set is", async () => {
    receiver = await startWebhookReceiver();
    const operatorUrl = `${receiver.url}?token=operator-secret-token`;
    server = await startTestServer({
      env: { ...ENV, AGENT_API_KEYS: KEY, WEBHOOK_URL: operatorUrl },
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

  it("is not named to an API key by its failed tries' errors either (host, address, port)", async () => {
    server = await startTestServer({
      env: { ...ENV, WEBHOOK_ALLOW_PRIVATE: "1", AGENT_API_KEYS: KEY, WEBHOOK_URL: "http://localhost:9/operator-hook" },
    });
    const session = (await server.request("POST", "/sessions", { body: {}, headers: as })).body;
    server.upstream.enqueue({ text: "done" });
    const run = (
      await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" }, headers: as })
    ).body.run;
    const listed = await until(
      async () => (await server?.request("GET", `/runs/${run.id}/webhooks`, { headers: as }))?.body,
      (body) => body.items[0]?.attempts.length > 0,
      "a failed try",
    );
    expect(listed.items[0].attempts[0]).toMatchObject({
      statusCode: null,
      error: "the operator's receiver was not reached",
    });
    expect(JSON.stringify(listed)).not.toMatch(/localhost|127\.0\.0\.1|::1|:9\b|operator-hook/);
  });
});
