/**
 * README (APPROVAL_TIMEOUT_MS): "an approval nobody answers within this of its request is
 * denied (fail closed); a restart does not start it over". A run a restart holds for a free
 * slot (MAX_CONCURRENT_RUNS) keeps its pending approval, and a decision for it is stored for
 * it to find. An approval sent after the call's deadline has passed must not be what the run
 * finds: the call was due to be denied by the timeout, as it is for a run executing here.
 */
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const TIMEOUT_MS = 3000;
const servers: TestServer[] = [];
let upstream: FakeUpstream | null = null;
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close().catch(() => {});
  await upstream?.close();
  upstream = null;
});

async function awaitingRun(server: TestServer, callId: string) {
  server.upstream.enqueue({
    toolCalls: [{ id: callId, name: "write_file", arguments: JSON.stringify({ path: `${callId}.txt`, content: "x" }) }],
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  const watcher = await openSse(`${server.url}/runs/${run.id}/events`);
  const requested = await watcher.waitFor((e) => e.event === "approval.requested");
  watcher.close();
  return { sessionId: session.id as string, runId: run.id as string, requestedAt: Date.parse(requested.json.at) };
}

it("an approval sent after the call's approval timeout is refused for a run held at restart, and the call is denied", async () => {
  upstream = await startFakeUpstream();
  const env = { APPROVAL_TIMEOUT_MS: String(TIMEOUT_MS), ON_RESTART: "resume" };
  const first = await startTestServer({ upstream, env: { ...env, MAX_CONCURRENT_RUNS: "2" } });
  const a = await awaitingRun(first, "call_a");
  const b = await awaitingRun(first, "call_b");
  await first.close({ keepDir: true, resume: true });

  // Room for one run: the older (a) resumes, b is held until a ends. a's model request after
  // its own timeout denial hangs, so b stays held.
  let release = () => {};
  upstream.enqueue({ text: "a done", gate: new Promise<void>((resolve) => (release = resolve)) });
  upstream.fallback = () => ({ text: "b done" });
  const second = await startTestServer({ upstream, dir: first.dir, env: { ...env, MAX_CONCURRENT_RUNS: "1" } });
  servers.push(second);
  // a's approval ran out (b's was asked after a's, and a's timeout fired in this process).
  await until(
    () => upstream?.requests.length ?? 0,
    (n) => n >= 3,
    "a's model request after its timeout denial",
  );
  // b's own deadline has passed too.
  await until(
    () => Date.now(),
    (now) => now > b.requestedAt + TIMEOUT_MS + 50,
    "b's approval deadline",
  );

  const late = await second.request("POST", `/runs/${b.runId}/approvals/call_b`, { body: { decision: "approve" } });

  release();
  await finishedRun(second, a.runId);
  await finishedRun(second, b.runId);
  const messages = (await second.request("GET", `/sessions/${b.sessionId}/messages`)).body.items;
  const result = messages.find((m: { role: string; toolCallId?: string }) => m.role === "tool");
  // Fail closed: the late approval is refused and the call is denied, never executed.
  expect({ decision: late.status, result: result?.metadata?.errorCode ?? result?.content }).toEqual({
    decision: 409,
    result: "DENIED",
  });
});
