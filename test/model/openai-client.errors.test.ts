import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createOpenAIModelClient } from "../../src/model/openai-client.js";
import { upstreamFetch } from "../../src/model/upstream-fetch.js";
import { clientFor, messageOf, request, TEST_API_KEY, upstream, useFakeUpstream } from "./support.js";

useFakeUpstream();

describe("OpenAI model client: upstream errors name the likely cause", () => {
  it("401 is MODEL_AUTH naming OPENAI_API_KEY, not retried, and never echoes the key", async () => {
    upstream.enqueue({
      status: 401,
      errorBody: {
        error: {
          message: `Incorrect API key provided: ${TEST_API_KEY}. You can find your API key at https://platform.openai.com.`,
          type: "invalid_request_error",
          code: "invalid_api_key",
        },
      },
    });
    const result = await clientFor(upstream).complete(request());

    expect(result).toMatchObject({ ok: false, code: "MODEL_AUTH" });
    expect(messageOf(result)).toContain("the upstream rejected the API key (OPENAI_API_KEY)");
    expect(messageOf(result)).toContain("Incorrect API key provided");
    expect(messageOf(result)).not.toContain(TEST_API_KEY);
    expect(messageOf(result)).not.toContain("sk-test");
    expect(upstream.requests).toHaveLength(1);
  });

  it("403 is MODEL_AUTH too", async () => {
    upstream.enqueue({ status: 403 });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_AUTH" });
  });

  it("404 is MODEL_NOT_FOUND naming the model, the base URL and both variables", async () => {
    upstream.enqueue({
      status: 404,
      errorBody: { error: { message: "The model `nope` does not exist", type: "invalid_request_error" } },
    });
    const result = await clientFor(upstream).complete(request({ model: "nope" }));

    expect(result).toMatchObject({ ok: false, code: "MODEL_NOT_FOUND" });
    expect(messageOf(result)).toContain(
      `model nope or base URL ${upstream.baseURL} not found: check OPENAI_MODEL and OPENAI_BASE_URL`,
    );
    expect(upstream.requests).toHaveLength(1);
  });

  it("429 then 200 is retried and succeeds", async () => {
    upstream.enqueue({ status: 429 }, { text: "after the wait" });
    const result = await clientFor(upstream).complete(request());

    expect(result).toMatchObject({ ok: true, text: "after the wait" });
    expect(upstream.requests).toHaveLength(2);
    expect(upstream.requests.map((r) => r.headers["x-stainless-retry-count"])).toEqual(["0", "1"]);
  });

  it("caps an upstream's long retry-after at maxRetryDelayMs (the SDK alone would sleep for it)", async () => {
    upstream.enqueue({ status: 429 }, { text: "ok" });
    const hourLongRetryAfter: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status !== 429) return response;
      const headers = new Headers(response.headers);
      headers.delete("retry-after-ms");
      headers.set("retry-after", "3600");
      return new Response(response.body, { status: response.status, headers });
    };
    const started = Date.now();
    const result = await clientFor(upstream, { fetch: hourLongRetryAfter, maxRetryDelayMs: 20 }).complete(request());
    expect(result).toMatchObject({ ok: true, text: "ok" });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(upstream.requests).toHaveLength(2);
  });

  it("429 on every attempt is MODEL_RATE_LIMITED after maxRetries retries", async () => {
    upstream.enqueue({ status: 429 }, { status: 429 }, { status: 429 });
    const result = await clientFor(upstream, { maxRetries: 2 }).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_RATE_LIMITED" });
    expect(upstream.requests).toHaveLength(3);
  });

  it("500 forever is retried a bounded number of times (maxRetries + 1 requests), then MODEL_UPSTREAM", async () => {
    upstream.fallback = () => ({ status: 500, errorBody: { error: { message: "boom", type: "server_error" } } });
    const result = await clientFor(upstream, { maxRetries: 3 }).complete(request());

    expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
    expect(messageOf(result)).toContain("HTTP 500");
    expect(messageOf(result)).toContain("boom");
    expect(upstream.requests).toHaveLength(4);
  });

  it("maxRetries 0 sends exactly one request", async () => {
    upstream.enqueue({ status: 503 });
    const result = await clientFor(upstream, { maxRetries: 0 }).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
    expect(upstream.requests).toHaveLength(1);
  });

  it("400 (e.g. context too long) is MODEL_UPSTREAM with the upstream's explanation, not retried", async () => {
    upstream.enqueue({
      status: 400,
      errorBody: { error: { message: "maximum context length is 8192 tokens", code: "context_length_exceeded" } },
    });
    const result = await clientFor(upstream).complete(request());
    expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
    expect(messageOf(result)).toContain("HTTP 400");
    expect(messageOf(result)).toContain("maximum context length is 8192 tokens");
    expect(upstream.requests).toHaveLength(1);
  });

  it("a connection failure is MODEL_UPSTREAM naming the base URL", async () => {
    const baseURL = await closedPortURL();
    const client = createOpenAIModelClient({ baseURL, apiKey: TEST_API_KEY, model: "m", maxRetries: 0 });
    const result = await client.complete(request());

    expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
    expect(messageOf(result)).toContain(`could not connect to the model upstream at ${baseURL}`);
    expect(messageOf(result)).toContain("ECONNREFUSED");
    expect(messageOf(result)).toContain("OPENAI_BASE_URL");
  });

  it("an error object sent mid-stream is MODEL_UPSTREAM with its message", async () => {
    const server = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify({ error: { message: "overloaded, try later", type: "server_error" } })}\n\n`);
      res.end();
    });
    try {
      const client = createOpenAIModelClient({ baseURL: server.baseURL, apiKey: TEST_API_KEY, model: "m" });
      const result = await client.complete(request());
      expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
      expect(messageOf(result)).toContain("overloaded, try later");
    } finally {
      await server.close();
    }
  });

  it.each([
    ["a numeric code 429 (OpenRouter)", { code: 429, message: "Rate limit exceeded: free-models-per-min" }],
    ["a rate_limit_exceeded code", { code: "rate_limit_exceeded", message: "Rate limit reached for requests" }],
  ])("a rate limit reported mid-stream with %s is MODEL_RATE_LIMITED with its message", async (_name, error) => {
    const server = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify({ error })}\n\n`);
      res.end();
    });
    try {
      const client = createOpenAIModelClient({ baseURL: server.baseURL, apiKey: TEST_API_KEY, model: "m" });
      const result = await client.complete(request());
      expect(result).toMatchObject({ ok: false, code: "MODEL_RATE_LIMITED" });
      expect(messageOf(result)).toContain(error.message);
      expect(messageOf(result)).toContain("mid-stream");
    } finally {
      await server.close();
    }
  });

  it("a stream ended by `data: [DONE]` with trailing spaces ends cleanly (as the SDK's own reader takes it)", async () => {
    const server = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = { choices: [{ index: 0, delta: { content: "hello" }, finish_reason: "stop" }] };
      res.write(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE] \n\n`);
      res.end();
    });
    try {
      const client = createOpenAIModelClient({ baseURL: server.baseURL, apiKey: TEST_API_KEY, model: "m" });
      const result = await client.complete(request());
      expect(result).toMatchObject({ ok: true, text: "hello" });
    } finally {
      await server.close();
    }
  });

  it("retried error responses with large bodies do not hold their connections open", async () => {
    let open = 0;
    let maxOpen = 0;
    let attempts = 0;
    const server = await rawServer((_req, res) => {
      attempts++;
      res.writeHead(500, { "content-type": "application/json" });
      // Far more than a socket buffer: unless the client destroys the body, the connection stays busy.
      res.end(JSON.stringify({ error: { message: "x".repeat(2_000_000) } }));
    });
    server.raw.on("connection", (socket) => {
      maxOpen = Math.max(maxOpen, ++open);
      socket.once("close", () => open--);
    });
    try {
      const client = createOpenAIModelClient({
        baseURL: server.baseURL,
        apiKey: TEST_API_KEY,
        model: "m",
        maxRetries: 2,
      });
      const result = await client.complete(request());
      expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
      expect(attempts).toBe(3);
      expect(maxOpen).toBeLessThanOrEqual(2);
    } finally {
      await server.close();
    }
  });

  it("the model fetch destroys a body whose iterator is returned before it was read (how the SDK cancels)", async () => {
    // A 2xx body: an error answer's body is read (bounded) before the fetch resolves.
    const server = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end("y".repeat(2_000_000));
    });
    try {
      const response = await upstreamFetch(`${server.baseURL}/chat/completions`, { method: "POST", body: "{}" });
      const body = response.body as unknown as NodeJS.ReadableStream & { destroyed: boolean };
      expect(body.destroyed).toBe(false);
      await body[Symbol.asyncIterator]().return?.();
      expect(body.destroyed).toBe(true);
    } finally {
      await server.close();
    }
  });

  it("a status above 599 with a long retry-after is capped and reported as that status, not as a failed connection", async () => {
    // The Response constructor refuses 600-999, which an upstream may still send.
    let requests = 0;
    const server = await rawServer((_req, res) => {
      requests++;
      res.writeHead(799, { "content-type": "application/json", "retry-after": "3600" });
      res.end(JSON.stringify({ error: { message: "odd gateway", type: "server_error" } }));
    });
    try {
      const client = createOpenAIModelClient({
        baseURL: server.baseURL,
        apiKey: TEST_API_KEY,
        model: "m",
        maxRetries: 1,
        maxRetryDelayMs: 20,
      });
      const started = Date.now();
      const result = await client.complete(request());
      expect(result).toMatchObject({ ok: false, code: "MODEL_UPSTREAM" });
      expect(messageOf(result)).toContain("HTTP 799");
      expect(messageOf(result)).not.toContain("could not connect");
      expect(requests).toBe(2);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await server.close();
    }
  });

  it("a 200 that is not an event stream is MODEL_BAD_RESPONSE pointing at OPENAI_BASE_URL", async () => {
    const server = await rawServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>Welcome to nginx!</body></html>");
    });
    try {
      const client = createOpenAIModelClient({ baseURL: server.baseURL, apiKey: TEST_API_KEY, model: "m" });
      const result = await client.complete(request());
      expect(result).toMatchObject({ ok: false, code: "MODEL_BAD_RESPONSE" });
      expect(messageOf(result)).toContain("text/html");
      expect(messageOf(result)).toContain("OPENAI_BASE_URL");
    } finally {
      await server.close();
    }
  });
});

/** A URL on 127.0.0.1 where nothing listens. */
async function closedPortURL(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

/** A one-off server for wire shapes the fake does not script. */
async function rawServer(
  handler: http.RequestListener,
): Promise<{ baseURL: string; raw: http.Server; close: () => Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    raw: server,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
