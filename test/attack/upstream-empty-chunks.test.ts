import { afterEach, describe, expect, it } from "vitest";
import { type RawUpstream, startRawUpstream } from "../helpers/raw-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * A model upstream that answers 200 and then streams chunks that bring nothing: no text, no
 * reasoning, no tool call (`{"choices":[]}`, an empty delta, a bare tool-call index), every
 * 50 ms, for ever. Such chunks used to re-arm the idle timer, so the run stayed `running` until
 * someone cancelled it (there is no limit on a run's duration by default), with the upstream's
 * connection and a run slot held.
 */
const IDLE_MS = 500;
const NOTHING = [
  { choices: [] },
  { choices: [{ index: 0, delta: {} }] },
  { choices: [{ index: 0, delta: { role: "assistant", content: "" } }] },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 0 }] } }] },
];

let server: TestServer | undefined;
let upstream: RawUpstream | undefined;
afterEach(async () => {
  await server?.close();
  upstream?.close();
  server = upstream = undefined;
});

describe("a model stream of chunks that bring no output", () => {
  it(`fails the run MODEL_TIMEOUT after MODEL_IDLE_TIMEOUT_MS (${IDLE_MS} ms) without output`, async () => {
    let sent = 0;
    upstream = await startRawUpstream((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const timer = setInterval(() => {
        const chunk = { id: "c1", object: "chat.completion.chunk", model: "m", ...NOTHING[sent++ % NOTHING.length] };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }, 50);
      res.on("close", () => clearInterval(timer));
    });
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: upstream.baseURL,
        MODEL_IDLE_TIMEOUT_MS: String(IDLE_MS),
        MODEL_MAX_RETRIES: "0",
      },
    });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
    const deadline = Date.now() + 10_000;
    let seen = run;
    while (seen.status !== "finished" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      seen = (await server.request("GET", `/runs/${run.id}`)).body;
    }
    expect(seen.status, `after ${sent} empty chunks`).toBe("finished");
    expect(seen.stopReason).toBe("error");
    expect(seen.error.code).toBe("MODEL_TIMEOUT");
    expect(seen.error.message).toContain(`no output (text, reasoning or tool calls) for ${IDLE_MS} ms`);
    // The chunks kept coming the whole time: only their emptiness ended the run.
    expect(sent).toBeGreaterThan(IDLE_MS / 50 - 2);
  }, 30_000);
});
