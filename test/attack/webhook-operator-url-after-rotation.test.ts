import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

/**
 * With API keys the operator's receiver (WEBHOOK_URL) is not shown to the keys: "the operator's
 * receiver, whose URL may hold a token, is not shown to them" (openapi.yaml). A run keeps the
 * target it started with, so the listing hides it by what the run recorded at its start (its
 * target is the server's default), not by comparing its URL with today's WEBHOOK_URL: an
 * operator who rotates the token in WEBHOOK_URL (a restart with the new one) or runs instances
 * configured apart must not show the keys the old URL, token and all, on the runs from before.
 */
const KEY = "key-a-0123456789abcdef";
const as = { authorization: `Bearer ${KEY}` };
let server: TestServer | undefined;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await server?.close();
  await receiver?.close();
  server = undefined;
});

it("after WEBHOOK_URL's token is rotated, the old operator URL is still not shown to API keys", async () => {
  receiver = await startWebhookReceiver();
  const env = { AGENT_API_KEYS: KEY, WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_POLL_MS: "20" };
  const oldUrl = `${receiver.url}?token=operator-secret-OLD`;
  server = await startTestServer({ env: { ...env, WEBHOOK_URL: oldUrl } });
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {}, headers: as })).body;
  const runId = (
    await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" }, headers: as })
  ).body.run.id as string;
  await receiver.until((d) => d.payload.data.runId === runId && d.answered === 200);
  const before = await until(
    async () => (await server?.request("GET", `/runs/${runId}/webhooks`, { headers: as }))?.body.items,
    (items: { status: string; url: string | null }[]) => items[0]?.status === "delivered",
    "the delivery to be recorded",
  );
  expect(before[0]?.url).toBeNull();

  // The operator rotates the receiver's token and restarts over the same database.
  const dir = server.dir;
  await server.close({ keepDir: true });
  server = await startTestServer({ dir, env: { ...env, WEBHOOK_URL: `${receiver.url}?token=operator-secret-NEW` } });
  const after = (await server.request("GET", `/runs/${runId}/webhooks`, { headers: as })).body.items;
  expect(after).toHaveLength(1);
  expect(after[0]).toMatchObject({ status: "delivered", url: null });
  expect(JSON.stringify(after)).not.toContain("operator-secret-OLD");
});

it("a run whose operator target an older release stored without saying whose it was still hides that URL from API keys", async () => {
  receiver = await startWebhookReceiver();
  const env = { AGENT_API_KEYS: KEY, WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_POLL_MS: "20" };
  const operatorUrl = `${receiver.url}?token=operator-secret-OLD`;
  server = await startTestServer({ env: { ...env, WEBHOOK_URL: operatorUrl } });
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {}, headers: as })).body;
  const runId = (
    await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" }, headers: as })
  ).body.run.id as string;
  await receiver.until((d) => d.payload.data.runId === runId && d.answered === 200);
  await until(
    async () => (await server?.request("GET", `/runs/${runId}/webhooks`, { headers: as }))?.body.items,
    (items: { status: string }[]) => items[0]?.status === "delivered",
    "the delivery to be recorded",
  );

  // The row as a release before the flag wrote it ({url, events}), read after a rotation.
  const dir = server.dir;
  await server.close({ keepDir: true });
  const db = new Database(join(dir, "agent.db"));
  const stored = JSON.parse(db.prepare("SELECT webhook FROM runs WHERE id = ?").pluck().get(runId) as string);
  expect(stored).toMatchObject({ url: operatorUrl, serverDefault: true });
  db.prepare("UPDATE runs SET webhook = ? WHERE id = ?").run(
    JSON.stringify({ url: stored.url, events: stored.events }),
    runId,
  );
  db.close();
  server = await startTestServer({ dir, env: { ...env, WEBHOOK_URL: `${receiver.url}?token=operator-secret-NEW` } });
  const after = (await server.request("GET", `/runs/${runId}/webhooks`, { headers: as })).body.items;
  expect(after).toHaveLength(1);
  expect(after[0]).toMatchObject({ status: "delivered", url: null });
  expect(JSON.stringify(after)).not.toContain("operator-secret-OLD");
});
