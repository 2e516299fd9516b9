/**
 * openapi.yaml: "Every `GET` route also answers `HEAD`". `GET /runs/{id}/events?token=` is
 * opened by a stream token (what a browser's EventSource can send); a HEAD of the same URL is
 * answered as that GET is (its head, no body), not refused 401. The token opens nothing else.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY = "key-a-0123456789abcdef";
const auth = { authorization: `Bearer ${KEY}` };
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
});
afterAll(async () => {
  await server.close();
});

it("HEAD /runs/{id}/events?token= is answered as the GET with that token is", async () => {
  server.upstream.enqueue({ text: "done" });
  const session = await server.request("POST", "/sessions", { body: {}, headers: auth });
  const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
    body: { input: "hi" },
    headers: auth,
  });
  expect(run.body.run.status).toBe("finished");
  const runId = run.body.run.id as string;
  const issued = await server.request("POST", `/runs/${runId}/stream-token`, { headers: auth });
  const q = `?token=${encodeURIComponent(issued.body.token)}`;

  const get = await fetch(`${server.url}/runs/${runId}/events${q}`);
  await get.text();
  const head = await fetch(`${server.url}/runs/${runId}/events${q}`, { method: "HEAD" });
  expect({ status: head.status, type: head.headers.get("content-type"), body: await head.text() }).toEqual({
    status: get.status,
    type: get.headers.get("content-type"),
    body: "",
  });
  expect(head.status).toBe(200);
  // The token opens no other route, by HEAD either.
  expect((await fetch(`${server.url}/runs/${runId}${q}`, { method: "HEAD" })).status).toBe(401);
});
