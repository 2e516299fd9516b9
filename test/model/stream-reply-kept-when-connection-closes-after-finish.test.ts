import type http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { type RawUpstream, startRawUpstream } from "../helpers/raw-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { sse } from "./raw-harness.js";

/**
 * README (Providers): a body that ends after a finish_reason but without `[DONE]` is a clean
 * end. An upstream (or a proxy before it) that closes the connection right after the last
 * chunk, without the chunked encoding's terminating chunk, delivers exactly the same bytes:
 * the whole answer, its finish_reason and its usage. That reply is thrown away today and the
 * run fails MODEL_UPSTREAM "broke mid-stream".
 */
let server: TestServer | undefined;
let upstream: RawUpstream | undefined;
afterEach(async () => {
  await server?.close();
  upstream?.close();
  server = upstream = undefined;
});

describe("a reply whose finish_reason and usage arrived", () => {
  it("is committed even though the upstream then closes the connection without ending the body cleanly", async () => {
    upstream = await startRawUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const writes = sse(
          [
            { choices: [{ index: 0, delta: { role: "assistant", content: "The full answer." }, finish_reason: null }] },
            { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
            { choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } },
          ],
          { done: false },
        );
        // Everything written goes out (the last write's callback), then the socket closes: no
        // terminating chunk. Ending the socket at once would send none of it.
        for (const write of writes.slice(0, -1)) res.write(write);
        res.write(writes.at(-1), () => res.socket?.end());
      });
    });
    server = await startTestServer({ env: { OPENAI_BASE_URL: upstream.baseURL } });
    const session = await server.request("POST", "/sessions", { body: {} });
    const done = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "go" } });
    expect(done.status).toBe(200);
    expect(done.body.run.error).toBeNull();
    expect(done.body.run).toMatchObject({ stopReason: "complete", stats: { inputTokens: 3, outputTokens: 4 } });
    expect(done.body.text).toBe("The full answer.");
  });
});
