import { afterEach, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("a delivery in flight when the server is killed stays in the outbox and is delivered after the restart", async () => {
  const upstream = await startFakeUpstream();
  const dir = tempDir("webhook-crash-");
  // The first try is held unanswered: the server dies while sending it.
  const receiver = await startWebhookReceiver((_delivery, tryNumber) => (tryNumber === 1 ? "hang" : 200));
  cleanups.push(
    () => upstream.close(),
    () => dir.cleanup(),
    () => receiver.close(),
  );
  const env = {
    WEBHOOK_SECRET,
    WEBHOOK_ALLOW_PRIVATE: "1",
    WEBHOOK_URL: receiver.url,
    WEBHOOK_TIMEOUT_MS: "1000",
    WEBHOOK_RETRY_BASE_MS: "50",
    WEBHOOK_POLL_MS: "20",
  };
  const child = await startChildServer({ dir: dir.path, upstreamURL: upstream.baseURL, env });
  cleanups.push(() => {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
  });
  upstream.enqueue({ text: "done" });
  const session = await api(child.url, "POST", "/sessions", {});
  const run = await api(child.url, "POST", `/sessions/${session.body.id}/runs?wait=true`, { input: "hi" });
  expect(run.body.run.stopReason).toBe("complete");
  const first = await receiver.until((d) => d.payload.type === "run.finished");
  child.process.kill("SIGKILL");
  expect(await child.exited).toBe("SIGKILL");

  const server = await startTestServer({ env, dir: dir.path, upstream });
  cleanups.push(() => server.close({ keepDir: true }));
  const again = await receiver.until((d) => d.id === first.id && d.answered === 200);
  expect(again.signatureValid).toBe(true);
  expect(again.payload).toEqual(first.payload);
  const listed = await server.request("GET", `/runs/${run.body.run.id}/webhooks`);
  expect(listed.body.items).toMatchObject([{ id: first.id, status: "delivered" }]);
});
