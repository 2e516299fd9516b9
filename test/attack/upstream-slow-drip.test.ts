import { afterEach, describe, expect, it } from "vitest";
import { guardRequest } from "../../src/model/request-guard.js";
import { type RawUpstream, startRawUpstream } from "../helpers/raw-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * A model upstream that answers 200 and then drips one character of text every 100 ms, for
 * ever: each chunk brings output, so the idle timer never fires, and no output cap is near.
 * Such a stream used to keep its run `running` (and its upstream connection and run slot)
 * until someone cancelled it, as a run has no limit on its duration by default.
 */
const IDLE_MS = 500;
const MAX_MS = 1_500;

let server: TestServer | undefined;
let upstream: RawUpstream | undefined;
afterEach(async () => {
  await server?.close();
  upstream?.close();
  server = upstream = undefined;
});

describe("a model stream that brings output for ever, slowly", () => {
  it(`fails the run MODEL_TIMEOUT once it went on past MODEL_STREAM_MAX_MS (${MAX_MS} ms)`, async () => {
    let sent = 0;
    upstream = await startRawUpstream((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const timer = setInterval(() => {
        sent++;
        const chunk = {
          id: "c1",
          object: "chat.completion.chunk",
          model: "m",
          choices: [{ index: 0, delta: { content: "x" } }],
        };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }, 100);
      res.on("close", () => clearInterval(timer));
    });
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: upstream.baseURL,
        MODEL_IDLE_TIMEOUT_MS: String(IDLE_MS),
        MODEL_STREAM_MAX_MS: String(MAX_MS),
      },
    });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const started = Date.now();
    const run = (await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } })).body
      .run;
    const tookMs = Date.now() - started;
    expect(run.stopReason).toBe("error");
    expect(run.error.code).toBe("MODEL_TIMEOUT");
    expect(run.error.message).toContain(`went on past ${MAX_MS} ms (MODEL_STREAM_MAX_MS)`);
    // Output kept coming the whole time, each chunk well within the idle timeout.
    expect(sent).toBeGreaterThanOrEqual(MAX_MS / 100 - 2);
    expect(tookMs).toBeLessThan(MAX_MS + 3_000);
  }, 30_000);
});

describe("guardRequest's deadline", () => {
  it("stops the request at the first output past maxMs, and not before", async () => {
    const guard = guardRequest({ signal: new AbortController().signal, idleTimeoutMs: 10_000, maxMs: 100 });
    guard.touch();
    expect(guard.cause()).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 130));
    expect(guard.cause()).toBeNull();
    guard.touch();
    expect(guard.cause()).toBe("deadline");
    expect(guard.signal.aborted).toBe(true);
    expect(await guard.stopped).toBe("deadline");
    guard.dispose();
  });
});
