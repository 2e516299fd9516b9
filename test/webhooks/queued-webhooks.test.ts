import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

let server: TestServer | undefined;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = receiver = undefined;
});

it("a queued run posts run.queued, then run.started only when it actually starts, signed", async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer({ env: { WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_POLL_MS: "20" } });
  let release!: () => void;
  server.upstream.enqueue({ text: "first", gate: new Promise<void>((r) => (release = r)) }, { text: "second" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const active = await server.request("POST", `/sessions/${session}/runs`, { body: { input: "first" } });
  expect(active.status).toBe(201);
  const queued = await server.request("POST", `/sessions/${session}/runs`, {
    body: { input: "second", ifBusy: "enqueue", webhook: { url: receiver.url, events: ["run.queued", "run.started"] } },
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
