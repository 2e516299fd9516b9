/**
 * Every event stream is answered `Cache-Control: no-cache, no-transform`: `no-transform` keeps a
 * proxy from compressing it, which would hold its frames back until a compressed block fills
 * (a heartbeat or a short event would never arrive on time). The header is the one openapi.yaml
 * documents (SseCacheControl), checked against the real answers.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { openSse, type SseStream } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const EXPECTED = "no-cache, no-transform";
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** Waits for the stream's end, then checks its header and validates the answer against openapi.yaml. */
async function checked(method: string, template: string, sse: SseStream): Promise<void> {
  const events = await sse.ended;
  expect(sse.status).toBe(200);
  expect(sse.headers["cache-control"]).toBe(EXPECTED);
  validateResponse({
    method,
    path: template,
    status: sse.status,
    body: events.map(({ id, event, data }) => ({ id, event, data })),
    contentType: sse.headers["content-type"] ?? null,
    headers: sse.headers as Record<string, unknown>,
  });
}

it("a run's event streams (the start's, GET /runs/{id}/events, HEAD) say no-cache, no-transform", async () => {
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  server.upstream.enqueue({ text: "done" });
  const start = await openSse(`${server.url}/sessions/${session.id}/runs`, { method: "POST", body: { input: "go" } });
  await checked("POST", "/sessions/{id}/runs", start);
  const runId: string = start.events[0]?.json.runId;

  await checked("GET", "/runs/{id}/events", await openSse(`${server.url}/runs/${runId}/events`));

  const head = await fetch(`${server.url}/runs/${runId}/events`, {
    method: "HEAD",
    headers: { accept: "text/event-stream" },
  });
  expect(head.headers.get("cache-control")).toBe(EXPECTED);
});

it("the chat's streams (a message's, the resume) say no-cache, no-transform", async () => {
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  let release!: () => void;
  server.upstream.enqueue({ text: "done", gate: new Promise<void>((resolve) => (release = resolve)) });
  const message = { id: "m1", role: "user", parts: [{ type: "text", text: "go" }] };
  const chat = await openSse(`${server.url}/sessions/${session.id}/chat`, {
    method: "POST",
    body: { id: session.id, messages: [message], trigger: "submit-message" },
  });
  // The resume, while the run is active.
  const resume = await openSse(`${server.url}/sessions/${session.id}/chat/stream`);
  release();
  await checked("POST", "/sessions/{id}/chat", chat);
  await checked("GET", "/sessions/{id}/chat/stream", resume);
});
