import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * README (Providers): "a body that ends, or whose connection closes or breaks, after a
 * `finish_reason` but without `[DONE]` is a clean end, the reply kept". The reply is whole once
 * its finish_reason arrived (law 3: the stream ended cleanly as far as the reply goes). An
 * upstream (or a proxy) that then merely keeps the connection open, sending nothing more (a
 * gateway holding the usage chunk or `[DONE]`), makes the server's own idle timer cut the
 * connection: that cut is the same as a connection that breaks after the finish_reason, so the
 * whole answer is committed and the run completes, not failed MODEL_TIMEOUT.
 */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a reply whose finish_reason arrived", () => {
  it("is committed when the upstream then goes silent until the idle timeout, not failed MODEL_TIMEOUT", async () => {
    server = await startTestServer({ env: { MODEL_IDLE_TIMEOUT_MS: "300" } });
    // Chunks: the role chunk, the content chunk, the finish chunk; then the upstream hangs
    // before its usage chunk and `[DONE]`, keeping the socket open.
    server.upstream.enqueue({ text: "The full answer.", hang: "after-chunks", afterChunks: 3 });
    const session = await server.request("POST", "/sessions", { body: {} });
    const done = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "go" } });
    expect(done.status).toBe(200);
    expect(done.body.run.error).toBeNull();
    expect(done.body.run.stopReason).toBe("complete");
    expect(done.body.text).toBe("The full answer.");
    const history = (await server.request("GET", `/sessions/${session.body.id}/messages`)).body.items;
    expect(history.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ["user", "go"],
      ["assistant", "The full answer."],
    ]);
  });

  it("a tool-call turn whose finish_reason arrived runs its call when the upstream then goes silent", async () => {
    server = await startTestServer({ env: { MODEL_IDLE_TIMEOUT_MS: "300" } });
    // The role chunk (with the call's header), the arguments chunk, the finish chunk; then silence.
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }], hang: "after-chunks", afterChunks: 3 },
      { text: "Nothing there." },
    );
    const session = await server.request("POST", "/sessions", { body: { approval: { default: "allow" } } });
    const done = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "go" } });
    expect(done.body.run.error).toBeNull();
    expect(done.body.run).toMatchObject({ stopReason: "complete", stats: { modelCalls: 2, toolCalls: 1, turns: 2 } });
    expect(done.body.text).toBe("Nothing there.");
  });
});
