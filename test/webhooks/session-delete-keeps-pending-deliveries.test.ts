/**
 * README: "A script need not hold a stream open to learn that a run finished": a session's
 * webhook gets `run.finished`, and "a delivery is written to an outbox in the same transaction
 * as its event". DELETE /sessions/{id} aborts the session's active run first, whose
 * `run.finished` (aborted) is written to the outbox; the session's delete then takes the runs but
 * not their pending deliveries, so the receiver still learns the run ended, retries and all.
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

it("the run.finished of a run aborted by DELETE /sessions/{id} still reaches the session's receiver", async () => {
  // The first try of each delivery fails, the next (2 s later) succeeds: the delivery is still
  // in the outbox when the delete comes, whether or not its first try was made by then.
  receiver = await startWebhookReceiver((_delivery, tryNumber) => (tryNumber === 1 ? 500 : 200));
  server = await startTestServer({
    env: { WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_RETRY_BASE_MS: "2000", WEBHOOK_POLL_MS: "20" },
  });
  server.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "list_files", arguments: "{}" }] });
  const session = await server.request("POST", "/sessions", {
    body: { approval: { tools: { list_files: "ask" } }, webhook: { url: receiver.url, events: ["run.finished"] } },
  });
  const run = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "list" } });
  expect(run.status).toBe(201);
  const runId = run.body.id as string;
  await until(
    async () => (await server?.request("GET", `/runs/${runId}`))?.body.status,
    (status) => status === "awaiting_approval",
    "the run to wait for approval",
  );
  const deleted = await server.request("DELETE", `/sessions/${session.body.id}`);
  expect(deleted.status).toBe(204);

  const finished = await receiver.until((d) => d.payload.data.runId === runId && d.answered === 200, 15_000);
  expect(finished.payload.type).toBe("run.finished");
  expect(finished.payload.data.run).toMatchObject({ id: runId, status: "finished", stopReason: "aborted" });
  // Tried again after its failed first try, as any delivery is.
  expect(receiver.received.filter((d) => d.id === finished.id).map((d) => d.answered)).toEqual([500, 200]);
});
