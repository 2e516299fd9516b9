/**
 * openapi.yaml documents `GET /sessions/{id}/chat/{chatId}/stream` (the URL the AI SDK's
 * DefaultChatTransport derives from `useChat({ id })`) with `chatId` of 1 to 256 characters,
 * ignored by the server, and `POST /runs/{id}/approvals/{toolCallId}` with a `toolCallId` of as
 * many. An id of 101 to 256 characters is answered as any other, not refused 400 BAD_REQUEST
 * ("exceeding the max param length": Fastify's default maxParamLength is 100); one past the
 * spec is still refused.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { call } from "../contract/support.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

it("resuming a chat whose id is 101 to 256 characters (as the spec allows) is answered like any other: 204 on an idle session", async () => {
  const session = await call(server, "POST", "/sessions");
  for (const length of [100, 101, 256]) {
    const res = await fetch(`${server.url}/sessions/${session.body.id}/chat/${"c".repeat(length)}/stream`);
    const body = await res.text();
    expect({ length, status: res.status, body: body.slice(0, 160) }).toEqual({ length, status: 204, body: "" });
  }
  const over = await fetch(`${server.url}/sessions/${session.body.id}/chat/${"c".repeat(257)}/stream`);
  expect(over.status).toBe(400);
});

it("a decision on a tool call id of 101 to 256 characters reaches the run: not a call it awaits (404), as a short one", async () => {
  server.upstream.enqueue({ text: "done" });
  const session = await call(server, "POST", "/sessions");
  const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "hi" } });
  const answers = [];
  for (const length of [10, 101, 256]) {
    const res = await server.request("POST", `/runs/${run.body.run.id}/approvals/${"t".repeat(length)}`, {
      body: { decision: "approve" },
    });
    answers.push({ length, status: res.status, code: res.body.error?.code });
  }
  const short = answers[0];
  expect(short?.status).toBe(404);
  expect(answers).toEqual([10, 101, 256].map((length) => ({ ...short, length })));
});
