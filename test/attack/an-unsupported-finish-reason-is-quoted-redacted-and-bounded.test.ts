/**
 * Bug: a finish_reason the server does not know is quoted into the run's error whole and raw:
 * none of the server's secrets is redacted from it, and it is not capped like every other
 * quote of the upstream (300 characters, src/model/redact.ts redactDetail).
 *
 * README (Security, "Secrets stay out of texts and logs"): "Error texts quoting the model
 * upstream (a run's `error` and `stopDetail`, its steps, its `run.finished` event, and so
 * webhooks and traces) ... have `OPENAI_API_KEY`, each of `AGENT_API_KEYS` ... replaced by
 * `[redacted]`". Every other upstream quote goes through redactDetail (classifyError), but
 * src/model/finish-reason.ts checkFinishReason builds `unsupported finish_reason: ${reason}`
 * from the upstream's string as it came. A gateway that ends a stream with a finish_reason
 * quoting the request (here, the user's pasted curl line with the tenant's key, as in
 * test/attack/upstream-error-quoting-agent-key-is-redacted.test.ts) puts the key in clear in
 * the run's error, served to the key and posted to the operator's webhook; and a finish_reason
 * of 200,000 characters (not counted against MODEL_MAX_OUTPUT_CHARS) is stored and served whole
 * in the run's error. Expected: the key `[redacted]` and the quote bounded, as for every other
 * upstream text.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const AGENT_KEY = "tenant-key-Hq3Zp9Lm2Vx7Rk4w";
const auth = { authorization: `Bearer ${AGENT_KEY}` };
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: AGENT_KEY } });
});
afterAll(async () => {
  await server?.close();
});

async function runEndingWith(finishReason: string) {
  server.upstream.enqueue({ text: "partial answer", finishReason });
  const session = await server.request("POST", "/sessions", { body: {}, headers: auth });
  expect(session.status).toBe(201);
  const started = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
    body: { input: "why does my curl line fail?" },
    headers: auth,
  });
  const run = started.body.run;
  expect(run.stopReason).toBe("error");
  expect(run.error.code).toBe("MODEL_UNSUPPORTED_FINISH");
  const runRecord = await server.request("GET", `/runs/${run.id}`, { headers: auth });
  const events = await fetch(`${server.url}/runs/${run.id}/events`, { headers: auth }).then((r) => r.text());
  const finished = events.split("\n\n").find((frame) => frame.includes("event: run.finished")) ?? "";
  expect(finished).toMatch(/run\.finished/);
  return { error: runRecord.body.error, stopDetail: String(runRecord.body.stopDetail), finished };
}

describe("a stream ending with a finish_reason the server does not know", () => {
  it("quotes it with the server's API keys redacted", async () => {
    const { error, stopDetail, finished } = await runEndingWith(
      `rejected: 'curl -H "Authorization: Bearer ${AGENT_KEY}"'`,
    );
    expect(error.message).toMatch(/unsupported finish_reason/);
    for (const [where, text] of [
      ["run error", JSON.stringify(error)],
      ["stop detail", stopDetail],
      ["run.finished event", finished],
    ] as const) {
      expect(text, where).not.toContain(AGENT_KEY);
    }
  });

  it("quotes at most a bounded excerpt of it", async () => {
    const { error } = await runEndingWith(`gateway_${"x".repeat(200_000)}`);
    expect(error.message).toMatch(/unsupported finish_reason/);
    expect(error.message.length).toBeLessThan(2_000);
  });
});
