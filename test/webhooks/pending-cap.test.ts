import { afterEach, describe, expect, it } from "vitest";
import { call } from "../contract/support.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

let server: TestServer | undefined;
const receivers: Awaited<ReturnType<typeof startWebhookReceiver>>[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
  await server?.close();
  server = undefined;
});

// A key whose receiver is down piled up pending deliveries, each retried until its 24 h window closed.
describe("WEBHOOK_MAX_PENDING_PER_KEY", () => {
  it("a key's newest delivery past the cap is given up, listed with its reason and logged with a count; its run is as ever", async () => {
    const down = await startWebhookReceiver(() => 503);
    receivers.push(down);
    const { lines, logger } = capturedLogs();
    const live = await startTestServer({
      logger,
      env: {
        WEBHOOK_SECRET,
        WEBHOOK_ALLOW_PRIVATE: "1",
        WEBHOOK_POLL_MS: "20",
        WEBHOOK_MAX_PENDING_PER_KEY: "2",
      },
    });
    server = live;
    live.upstream.enqueue({ text: "one" }, { text: "two" }, { text: "three" });
    const session = await live.request("POST", "/sessions", {
      body: { webhook: { url: down.url, events: ["run.finished"] } },
    });
    const runs: string[] = [];
    for (const input of ["one", "two", "three"]) {
      const run = await live.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input } });
      expect(run.body).toMatchObject({ run: { status: "finished", stopReason: "complete" }, text: input });
      runs.push(run.body.run.id as string);
    }

    // Within a few polls the newest, the third, is given up; the two older stay pending (their
    // receiver answers 503, so they are retried).
    const third = await until(
      async () => (await call(live, "GET", "/runs/{id}/webhooks", { params: { id: runs[2] as string } })).body,
      (body) => body.items[0]?.status === "failed",
      "the third run's delivery to be given up",
    );
    expect(third.items).toEqual([
      expect.objectContaining({
        type: "run.finished",
        status: "failed",
        nextAttemptAt: null,
        reason: "given up: 2 older deliveries of its key were pending (WEBHOOK_MAX_PENDING_PER_KEY)",
      }),
    ]);
    for (const runId of runs.slice(0, 2)) {
      const listed = await call(live, "GET", "/runs/{id}/webhooks", { params: { id: runId } });
      expect(listed.body.items).toMatchObject([{ type: "run.finished", status: "pending", reason: null }]);
    }
    const logged = await until(
      () => lines.map((line) => JSON.parse(line)).find((entry) => /given up/.test(entry.msg)),
      Boolean,
      "the log of deliveries given up",
    );
    expect(logged).toMatchObject({ level: 40, givenUp: 1, owners: [{ owner: null, count: 1 }], maxPendingPerKey: 2 });
    const givenUp = await live.ctx.metrics.registry.getSingleMetric("agent_webhook_deliveries_given_up_total")?.get();
    expect(givenUp?.values).toEqual([expect.objectContaining({ labels: { reason: "cap" }, value: 1 })]);
  });
});
