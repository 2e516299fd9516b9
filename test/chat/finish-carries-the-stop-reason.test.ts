/**
 * A chat's run that stops short (at a limit, a loop, a failure) ends its stream with a `finish`
 * whose finishReason (length, other, error) cannot tell the page which limit it met or what to
 * do: the finish chunk's messageMetadata carries the run's stopReason and stopDetail, which the
 * SDK's own client folds into the assistant message's `metadata`.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { assistant, NodeChat, until } from "../helpers/node-chat.js";
import { validateSchema } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { DEFAULT_MAX_TURNS: "1" } });
});
afterAll(async () => {
  await server?.close();
});

it("a chat whose run stops at max_turns has its stopReason and stopDetail in the message's metadata", async () => {
  server.upstream.enqueue({ toolCalls: [{ id: "call_ls", name: "list_files", arguments: "{}" }] });
  const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const chat = new NodeChat(`${server.url}/sessions/${sessionId}/chat`);
  await chat.sendMessage({ text: "look around" });
  await until("the run's end", () => chat.status === "ready" || chat.status === "error");
  expect(chat.error).toBeUndefined();

  const run = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items[0];
  expect(run).toMatchObject({ stopReason: "max_turns", stopDetail: expect.any(String) });
  expect(assistant(chat)?.metadata).toEqual({ stopReason: "max_turns", stopDetail: run.stopDetail });
});

it("a chat whose run completes has stopReason complete (and no stopDetail) in the message's metadata", async () => {
  server.upstream.enqueue({ text: "hello" });
  const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const chat = new NodeChat(`${server.url}/sessions/${sessionId}/chat`);
  await chat.sendMessage({ text: "hi" });
  await until("the run's end", () => chat.status === "ready" || chat.status === "error");
  expect(assistant(chat)?.metadata).toEqual({ stopReason: "complete", stopDetail: null });
});

it("the finish chunk of a run stopped at max_turns is one the spec describes", async () => {
  server.upstream.enqueue({ toolCalls: [{ id: "call_ls", name: "list_files", arguments: "{}" }] });
  const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const res = await fetch(`${server.url}/sessions/${sessionId}/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "look" }] }] }),
  });
  const chunks = (await res.text())
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice("data: ".length)));
  for (const chunk of chunks) validateSchema("UiMessageChunk", chunk);
  expect(chunks.at(-1)).toEqual({
    type: "finish",
    finishReason: "length",
    messageMetadata: { stopReason: "max_turns", stopDetail: expect.stringMatching(/maxTurns/) },
  });
});
