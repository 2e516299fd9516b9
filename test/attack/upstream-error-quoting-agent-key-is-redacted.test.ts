/**
 * Bug: an upstream error text that quotes one of AGENT_API_KEYS reaches the run's `error`, its
 * `stopDetail`, its steps and its `run.finished` event in clear.
 *
 * README (Security, "Secrets stay out of texts and logs"): "Error texts quoting the model
 * upstream and every log line have `OPENAI_API_KEY` and each of `AGENT_API_KEYS` replaced by
 * `[redacted]` in any encoding". Upstreams quote the request in their 400s ("Invalid content in
 * messages[1]: '...'"), and a conversation may well hold an API key (a user pasting a curl line,
 * a file the model read). The log line is redacted (the logger knows the keys), but the error
 * text the run keeps is built by classifyError -> redactDetail, which is only given
 * OPENAI_API_KEY: the agent key is served back over HTTP and SSE, posted to webhooks (the
 * operator's WEBHOOK_URL receives every key's runs) and exported as span status to OpenTelemetry.
 * Expected: the key replaced by `[redacted]` in every such text, as it is for OPENAI_API_KEY.
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

describe("an upstream error quoting an API key of the server", () => {
  it("is shown with the key [redacted] in the run's error, stop detail, steps and events", async () => {
    server.upstream.enqueue({
      status: 400,
      errorBody: {
        error: {
          message: `Invalid content in messages[1]: 'curl -H "Authorization: Bearer ${AGENT_KEY}" ...'`,
          type: "invalid_request_error",
        },
      },
    });
    const session = await server.request("POST", "/sessions", { body: {}, headers: auth });
    expect(session.status).toBe(201);
    const started = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      body: { input: "why does my curl line fail?" },
      headers: auth,
    });
    const run = started.body.run;
    expect(run.stopReason).toBe("error");
    // The upstream's words are quoted (the run says why it stopped)...
    expect(run.error.message).toMatch(/Invalid content in messages\[1\]/);
    // ...but never the key.
    const runRecord = await server.request("GET", `/runs/${run.id}`, { headers: auth });
    const steps = await server.request("GET", `/runs/${run.id}/steps`, { headers: auth });
    const events = await fetch(`${server.url}/runs/${run.id}/events`, { headers: auth }).then((r) => r.text());
    const finished = events.split("\n\n").find((frame) => frame.includes("event: run.finished")) ?? "";
    expect(finished).toMatch(/run\.finished/);
    for (const [where, text] of [
      ["run error", JSON.stringify(runRecord.body.error)],
      ["stop detail", String(runRecord.body.stopDetail)],
      ["steps", JSON.stringify(steps.body)],
      ["run.finished event", finished],
    ] as const) {
      expect(text, where).not.toContain(AGENT_KEY);
    }
    expect(run.error.message).toContain("[redacted]");
  });
});
