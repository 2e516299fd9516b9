import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { clientFor, deferred, messageOf, request, upstream, useFakeUpstream } from "./support.js";

useFakeUpstream();

describe("OpenAI model client: abort", () => {
  it("abort mid-stream returns MODEL_ABORTED (the SDK ends the stream silently; the client notices)", async () => {
    const gate = deferred();
    upstream.enqueue({ text: ["partial ", "answer"], gate: gate.promise });
    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = clientFor(upstream).complete(
      request({
        signal: controller.signal,
        onTextDelta: (t) => {
          deltas.push(t);
          // Abort later, while the client awaits the next chunk (the gate holds the stream open).
          if (deltas.join("") === "partial answer") setTimeout(() => controller.abort(), 20);
        },
      }),
    );
    const result = await pending;
    gate.resolve();

    expect(result).toMatchObject({ ok: false, code: "MODEL_ABORTED" });
    expect(result.timing.firstTokenMs).not.toBeNull();
    expect(deltas).toEqual(["partial ", "answer"]);
  });

  it("a signal aborted before the call returns MODEL_ABORTED without sending anything", async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await clientFor(upstream).complete(request({ signal: controller.signal }));
    expect(result).toMatchObject({ ok: false, code: "MODEL_ABORTED" });
    expect(upstream.requests).toHaveLength(0);
  });

  it("abort while waiting for the response headers returns MODEL_ABORTED at once", async () => {
    const controller = new AbortController();
    upstream.enqueue({ hang: "before-headers", onRequest: () => setTimeout(() => controller.abort(), 10) });
    const started = Date.now();
    const result = await clientFor(upstream, { requestTimeoutMs: 5_000 }).complete(
      request({ signal: controller.signal }),
    );
    expect(result).toMatchObject({ ok: false, code: "MODEL_ABORTED" });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("abort during the SDK's retry backoff returns MODEL_ABORTED at once, without another attempt", async () => {
    const controller = new AbortController();
    upstream.enqueue({ status: 429, onRequest: () => setTimeout(() => controller.abort(), 50) });
    // Ask the SDK to back off for 30 s (it sleeps without watching the signal).
    const slowRetryFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status !== 429) return response;
      const headers = new Headers(response.headers);
      headers.set("retry-after-ms", "30000");
      return new Response(response.body, { status: response.status, headers });
    };
    const started = Date.now();
    const result = await clientFor(upstream, { fetch: slowRetryFetch }).complete(
      request({ signal: controller.signal }),
    );
    expect(result).toMatchObject({ ok: false, code: "MODEL_ABORTED" });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(upstream.requests).toHaveLength(1);
  });
});

describe("OpenAI model client: the caller's signal", () => {
  it("leaves no listener on a long-lived run signal after each request", async () => {
    const controller = new AbortController();
    upstream.enqueue({ text: "a" }, { status: 401 }, { text: "b", finishReason: "length" });
    const client = clientFor(upstream);
    for (let i = 0; i < 3; i++) await client.complete(request({ signal: controller.signal }));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("rethrows an exception from onTextDelta (a caller bug, not a model failure)", async () => {
    upstream.enqueue({ text: ["a", "b"] });
    const pending = clientFor(upstream).complete(
      request({
        onTextDelta: () => {
          throw new Error("emit failed");
        },
      }),
    );
    await expect(pending).rejects.toThrow("emit failed");
  });
});

describe("OpenAI model client: timeouts", () => {
  it("no response headers within requestTimeoutMs is MODEL_TIMEOUT", async () => {
    // Any request that arrives hangs; on a loaded machine the timeout may fire before one arrives.
    upstream.fallback = () => ({ hang: "before-headers" });
    const result = await clientFor(upstream, { requestTimeoutMs: 100, maxRetries: 0 }).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_TIMEOUT" });
    expect(messageOf(result)).toContain("within 100 ms");
    expect(messageOf(result)).toContain(upstream.baseURL);
  });

  it("a stream that stalls mid-way for idleTimeoutMs is MODEL_TIMEOUT, distinct from an abort", async () => {
    upstream.enqueue({ text: ["one ", "two"], hang: "after-chunks", afterChunks: 2 });
    const deltas: string[] = [];
    const result = await clientFor(upstream, { idleTimeoutMs: 150 }).complete(
      request({ onTextDelta: (t) => deltas.push(t) }),
    );
    expect(result).toMatchObject({ ok: false, code: "MODEL_TIMEOUT" });
    expect(messageOf(result)).toContain("no output (text, reasoning or tool calls) for 150 ms");
    expect(deltas).toEqual(["one "]);
    expect(upstream.requests).toHaveLength(1);
  });

  it("a slow but steady stream is not an idle timeout (the timer resets on every chunk)", async () => {
    const gate = deferred();
    upstream.enqueue({ text: ["a", "b"], gate: gate.promise });
    const pending = clientFor(upstream, { idleTimeoutMs: 300 }).complete(request());
    // Longer in total than idleTimeoutMs, but no single gap reaches it.
    await new Promise((r) => setTimeout(r, 200));
    gate.resolve();
    expect(await pending).toMatchObject({ ok: true, text: "ab" });
  });
});

describe("OpenAI model client: broken streams", () => {
  it("a connection destroyed mid-stream is an error value (MODEL_UPSTREAM), not retried", async () => {
    upstream.enqueue({ text: ["a", "b", "c"], destroy: true, afterChunks: 2 });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
    expect(messageOf(result)).toContain("broke mid-stream");
    expect(upstream.requests).toHaveLength(1);
  });

  it("a non-JSON chunk is MODEL_BAD_RESPONSE", async () => {
    upstream.enqueue({ text: ["a", "b"], malformed: true, afterChunks: 2 });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_BAD_RESPONSE" });
    expect(messageOf(result)).toContain("not valid JSON");
  });

  it("a tool call without a function name is MODEL_BAD_RESPONSE", async () => {
    upstream.enqueue({ toolCalls: [{ id: "c1", name: "", arguments: "{}" }] });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_BAD_RESPONSE" });
    expect(messageOf(result)).toContain("without a function name");
  });
});
