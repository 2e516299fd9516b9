/**
 * A steer under an `Idempotency-Key` whose input the active run took (202), then the same key
 * with another `ifBusy` once the session is idle. openapi.yaml: "With `Idempotency-Key`, a
 * repeated steer steers nothing twice"; a retried request (same key, same body; `ifBusy` is not
 * among the fields compared) "is answered as the first one was", other input under the key is
 * 409 IDEMPOTENCY_KEY_REUSED. A steer's key names an input, not a run: a start under it, whatever
 * its `ifBusy`, must find that input and not run it a second time.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

/** A session whose run took `input`, steered under `key` (202), and has ended. */
async function steeredAndEnded(key: string, input: string): Promise<{ sessionId: string; runId: string }> {
  const { sessionId, runId } = await runAwaitingApproval(server);
  const steered = server.request("POST", `/sessions/${sessionId}/runs`, {
    body: { input, ifBusy: "steer" },
    headers: { "idempotency-key": key },
  });
  await until(
    () => server.ctx.store.inputs.pending(runId),
    (p) => p.length === 1,
    "the steered input to be stored",
  );
  server.upstream.enqueue({ text: "hello, and written" });
  const approved = await server.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
  expect(approved.status).toBe(200);
  const first = await steered;
  expect({ status: first.status, runId: first.body.id }).toEqual({ status: 202, runId });
  await finishedRun(server, runId);
  server.upstream.fallback = () => ({ text: "hello again" });
  return { sessionId, runId };
}

const runsOf = async (sessionId: string) =>
  ((await server.request("GET", `/sessions/${sessionId}/runs`)).body.items as { id: string }[]).length;

it.each(["enqueue", "reject", "interrupt"])(
  "the key of a steer the run took, reused with ifBusy %s, starts no second run with its input",
  async (ifBusy) => {
    const key = `steer-key-${ifBusy}`;
    const { sessionId, runId } = await steeredAndEnded(key, "also say hello");
    // The same request under the same key, another ifBusy: a retry of the steer, or a misuse of its key.
    const again = await server.request("POST", `/sessions/${sessionId}/runs`, {
      body: { input: "also say hello", ifBusy },
      headers: { "idempotency-key": key },
    });
    const answer =
      again.status === 409 ? again.body.error.code : again.body.id === runId ? "the first run" : "a new run";
    // The first answer again (the run that took the input), or 409 IDEMPOTENCY_KEY_REUSED; never a second run.
    expect({ answer, runs: await runsOf(sessionId) }, `HTTP ${again.status}: ${answer}`).toEqual({
      answer: expect.stringMatching(/^(the first run|IDEMPOTENCY_KEY_REUSED)$/),
      runs: 1,
    });
  },
);

it("the key of a steer the run took, reused with other input and ifBusy reject, is 409 IDEMPOTENCY_KEY_REUSED naming that run", async () => {
  const { sessionId, runId } = await steeredAndEnded("steer-key-other", "also say hello");
  const other = await server.request("POST", `/sessions/${sessionId}/runs`, {
    body: { input: "say something else" },
    headers: { "idempotency-key": "steer-key-other" },
  });
  expect({ status: other.status, code: other.body.error?.code, runId: other.body.error?.details?.runId }).toEqual({
    status: 409,
    code: "IDEMPOTENCY_KEY_REUSED",
    runId,
  });
  expect(await runsOf(sessionId)).toBe(1);
});
