/**
 * `regenerate()` of the AI SDK's chat (what `useChat` wraps): the page drops the last answer and
 * asks again, but the session's history keeps it, so a new run would send the model the old
 * answer and the question twice while the page shows neither. It is refused, and nothing is
 * stored or started. So is an edit of a sent message (`sendMessage({ text, messageId })`),
 * which was taken as a new message: the model was sent the old question and its answer before
 * the edited one, while the page showed only the edited one.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { assistant, NodeChat, texts, until } from "../helpers/node-chat.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

it("regenerate() is refused with REGENERATE_UNSUPPORTED: no run starts and the history stays as it was", async () => {
  server.upstream.enqueue({ text: "first answer" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const chat = new NodeChat(`${server.url}/sessions/${session.id}/chat`);
  await chat.sendMessage({ text: "hi" });
  await until("the answer", () => chat.status === "ready" && texts(assistant(chat)) === "first answer");
  const requests = server.upstream.requests.length;

  await chat.regenerate();
  await until("the refusal", () => chat.status !== "submitted" && chat.status !== "streaming");
  expect(chat.status).toBe("error");
  expect(chat.error?.message).toMatch(/REGENERATE_UNSUPPORTED/);
  expect(server.upstream.requests.length).toBe(requests);
  const runs = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items;
  expect(runs).toHaveLength(1);
  const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
  expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
});

it("an edit of a sent message is refused with EDIT_UNSUPPORTED: no run starts and the history stays as it was", async () => {
  server.upstream.enqueue({ text: "Paris" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const chat = new NodeChat(`${server.url}/sessions/${session.id}/chat`);
  await chat.sendMessage({ text: "capital of France?" });
  await until("the answer", () => chat.status === "ready" && texts(assistant(chat)) === "Paris");
  const requests = server.upstream.requests.length;

  await chat.sendMessage({ text: "capital of Italy?", messageId: chat.messages[0]?.id });
  await until("the refusal", () => chat.status !== "submitted" && chat.status !== "streaming");
  expect(chat.status).toBe("error");
  expect(chat.error?.message).toMatch(/EDIT_UNSUPPORTED/);
  expect(server.upstream.requests.length).toBe(requests);
  const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
  expect(messages.map((m: { content: string }) => m.content)).toEqual(["capital of France?", "Paris"]);
});
