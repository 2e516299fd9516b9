/**
 * README (APPROVAL_TIMEOUT_MS): "an approval nobody answers within this of its request is denied
 * (fail closed); ... an approval sent later is 409 APPROVAL_CONFLICT". openapi.yaml: a decision
 * answered 200 "is recorded". An approval sent well within the timeout in force, answered 200
 * and shown as `approved` by GET /runs/{id}/approvals, is a decision the ledger holds: a later
 * restart with a shorter APPROVAL_TIMEOUT_MS must not turn it into the timeout's denial.
 *
 * Over one SQLite server: a run a restart holds for a slot (MAX_CONCURRENT_RUNS) takes its
 * decision into the ledger (answered 200); the next restart, with a shorter timeout, resumes it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const LONG_MS = 60_000;
const SHORT_MS = 1000;
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

it("an approval answered 200 within the timeout is not denied by a restart with a shorter APPROVAL_TIMEOUT_MS", async () => {
  upstream = await startFakeUpstream();
  const first = await startTestServer({
    upstream,
    env: { APPROVAL_TIMEOUT_MS: String(LONG_MS), ON_RESTART: "resume", MAX_CONCURRENT_RUNS: "2" },
  });
  const a = await awaitingRun(first, "call_a");
  const b = await awaitingRun(first, "call_b");
  await first.close({ keepDir: true, resume: true });

  // Room for one run: a resumes (and waits for its approval again), b is held for a slot.
  const second = await startTestServer({
    upstream,
    dir: first.dir,
    env: { APPROVAL_TIMEOUT_MS: String(LONG_MS), ON_RESTART: "resume", MAX_CONCURRENT_RUNS: "1" },
  });
  await until(
    async () => (await second.request("GET", `/runs/${a.runId}`)).body.status,
    (status) => status === "awaiting_approval",
    "a waiting for its approval again",
  );
  // b is approved well within its 60 s, a little over SHORT_MS after its request.
  await until(
    () => Date.now(),
    (now) => now > b.requestedAt + SHORT_MS + 200,
    "a moment after b's request",
  );
  const approved = await second.request("POST", `/runs/${b.runId}/approvals/call_b`, { body: { decision: "approve" } });
  expect(approved.status).toBe(200);
  await second.close({ keepDir: true, resume: true });

  upstream.fallback = () => ({ text: "done" });
  const third = await startTestServer({
    upstream,
    dir: first.dir,
    env: { APPROVAL_TIMEOUT_MS: String(SHORT_MS), ON_RESTART: "resume", MAX_CONCURRENT_RUNS: "2" },
  });
  servers.push(third);
  await finishedRun(third, b.runId);
  const codes = toolResultCodes(await validHistory(third, b.sessionId));
  const workspace = (await third.request("GET", `/sessions/${b.sessionId}`)).body.workspace as string;
  const written = existsSync(join(third.ctx.config.WORKSPACE_ROOT, workspace, "call_b.txt"));
  expect({ codes, written }).toEqual({
    codes: [null],
    written: true,
  });
});
