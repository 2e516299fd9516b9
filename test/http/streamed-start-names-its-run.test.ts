/**
 * A run started with `Accept: text/event-stream` is answered with its events, the first of
 * which names it; a client whose connection drops before that event (a proxy's timeout, a
 * network change) could not know which run to follow again or cancel. The answer's head names
 * the run (`Location: /runs/{id}`), as the other answers of a start do, checked against
 * openapi.yaml; a start replayed by its Idempotency-Key names the same run.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

it("a streamed start's head names the run it started, and its replay the same run", async () => {
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  server.upstream.enqueue({ text: "done" });
  const url = `${server.url}/sessions/${session.id}/runs`;
  const headers = { "idempotency-key": "start-1" };
  const start = await openSse(url, { method: "POST", body: { input: "go" }, headers });
  const events = await start.ended;
  const runId: string = start.events[0]?.json.runId;
  expect(runId).toMatch(/^run_/);
  expect({ status: start.status, location: start.headers.location }).toEqual({
    status: 200,
    location: `/runs/${runId}`,
  });
  validateResponse({
    method: "POST",
    path: "/sessions/{id}/runs",
    status: start.status,
    body: events.map(({ id, event, data }) => ({ id, event, data })),
    contentType: start.headers["content-type"] ?? null,
    headers: start.headers as Record<string, unknown>,
  });

  const replay = await openSse(url, { method: "POST", body: { input: "go" }, headers });
  await replay.ended;
  expect({ status: replay.status, location: replay.headers.location }).toEqual({
    status: 200,
    location: `/runs/${runId}`,
  });
});
