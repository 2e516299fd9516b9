/**
 * Bug: an API key that shares its first half with another configured secret (two keys of one
 * naming scheme: `team-alpha-2024-<8 random>`) is redacted only as far as the shared part goes:
 * the rest of it, the very part that tells the keys apart, is shown in clear.
 *
 * README (Security, "Secrets stay out of texts and logs"): error texts quoting the model upstream
 * (a run's `error` and `stopDetail`, its steps, its `run.finished` event, and so webhooks and
 * traces) and every log line have "each of `AGENT_API_KEYS` ... replaced by `[redacted]`". The
 * redactor (src/model/redact.ts, secretRedactor) joins every secret's pattern into one regex
 * alternation, each pattern also matching a prefix of its secret at least half as long (the
 * "cut short" rule). A regex alternation takes the FIRST alternative that matches, not the
 * longest: at the start of key B, key A's pattern matches the prefix they share and ends
 * there, so "team-alpha-2024-Zk9mV4nL" becomes "[redacted]Zk9mV4nL".
 *
 * Seen from outside: tenant B's conversation holds its own key (a pasted curl line, as in
 * test/attack/upstream-error-quoting-agent-key-is-redacted.test.ts), the upstream quotes it in a
 * 400, and the run's error (served over HTTP/SSE, posted to the operator's webhook, exported to
 * traces) carries the 8 secret characters of B's key after "[redacted]". Expected: the whole key
 * replaced, whatever other secrets share a prefix with it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY_A = "team-alpha-2024-Qw7rT2xP";
const KEY_B = "team-alpha-2024-Zk9mV4nL";
const B_SECRET_PART = "Zk9mV4nL";
const authB = { authorization: `Bearer ${KEY_B}` };
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}` } });
});
afterAll(async () => {
  await server?.close();
});

describe("an upstream error quoting the second of two keys that share a prefix", () => {
  it("shows none of that key in the run's error, stop detail, steps or run.finished event", async () => {
    server.upstream.enqueue({
      status: 400,
      errorBody: {
        error: {
          message: `Invalid content in messages[1]: 'curl -H "Authorization: Bearer ${KEY_B}" ...'`,
          type: "invalid_request_error",
        },
      },
    });
    const session = await server.request("POST", "/sessions", { body: {}, headers: authB });
    expect(session.status).toBe(201);
    const started = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      body: { input: "why does my curl line fail?" },
      headers: authB,
    });
    const run = started.body.run;
    expect(run.stopReason).toBe("error");
    expect(run.error.message).toMatch(/Invalid content in messages\[1\]/);
    expect(run.error.message).toContain("[redacted]");

    const runRecord = await server.request("GET", `/runs/${run.id}`, { headers: authB });
    const steps = await server.request("GET", `/runs/${run.id}/steps`, { headers: authB });
    const events = await fetch(`${server.url}/runs/${run.id}/events`, { headers: authB }).then((r) => r.text());
    const finished = events.split("\n\n").find((frame) => frame.includes("event: run.finished")) ?? "";
    expect(finished).toMatch(/run\.finished/);
    for (const [where, text] of [
      ["run error", JSON.stringify(runRecord.body.error)],
      ["stop detail", String(runRecord.body.stopDetail)],
      ["steps", JSON.stringify(steps.body)],
      ["run.finished event", finished],
    ] as const) {
      expect(text, where).not.toContain(B_SECRET_PART);
    }
  });
});
