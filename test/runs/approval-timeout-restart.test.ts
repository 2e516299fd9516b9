import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// Scaled down from "a request made 10 s before a restart with a 15 s timeout is denied ~5 s
// after it": the same proportions in milliseconds.
const TIMEOUT_MS = 1500;
const BEFORE_RESTART_MS = 1000;

const servers: TestServer[] = [];
let upstream: FakeUpstream | null = null;
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  await upstream?.close();
  upstream = null;
});

it("an approval's timeout counts from its stored request time: a restart does not start it over", async () => {
  upstream = await startFakeUpstream();
  const env = { APPROVAL_TIMEOUT_MS: String(TIMEOUT_MS), ON_RESTART: "resume" };
  const first = await startTestServer({ env, upstream });
  upstream.enqueue(
    { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"w.txt","content":"w"}' }] },
    { text: "not written" },
  );
  const session = (await first.request("POST", "/sessions", { body: {} })).body;
  const run = (await first.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  const watcher = await openSse(`${first.url}/runs/${run.id}/events`);
  const requested = await watcher.waitFor((e) => e.event === "approval.requested");
  const requestedAt = Date.parse(requested.json.at);
  await new Promise((resolve) => setTimeout(resolve, BEFORE_RESTART_MS));
  await first.close({ keepDir: true, resume: true });

  const second = await startTestServer({ env, upstream, dir: first.dir });
  servers.push(second);
  const restartedAt = Date.now();
  const rest = await openSse(`${second.url}/runs/${run.id}/events`, {
    headers: { "last-event-id": String(requested.id) },
  });
  const events = await rest.ended;
  const resolved = events.find((e) => e.event === "approval.resolved");
  expect(resolved?.json).toMatchObject({ toolCallId: "call_w", decision: "deny" });
  expect(resolved?.json.reason).toMatch(/no decision within the approval timeout/);
  // Denied when the timeout ran out, counted from the request (~500 ms after the restart),
  // not a whole timeout after the restart. The request's time is the ledger's, taken as the
  // call reached the gate; its event is stamped when written, a little later under load.
  const deniedAt = Date.parse(resolved?.json.at);
  const ledger = await second.ctx.store.toolCalls.get(run.id, "call_w");
  const askedAt = Date.parse(ledger?.approvalRequestedAt ?? "");
  expect(askedAt).toBeLessThanOrEqual(requestedAt);
  expect(deniedAt - askedAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
  expect(deniedAt - restartedAt).toBeLessThan(TIMEOUT_MS - 300);
  expect(events.at(-1)?.json.run.stopReason).toBe("complete");
});
