/**
 * A chat whose run fails (here: the model upstream refuses the request, MODEL_UPSTREAM), driven
 * by the AI SDK's own chat client. README ("useChat"): "Once the run has ended, the message's
 * `metadata` is `{stopReason, stopDetail}`": which limit a run stopped at and what to do.
 *
 * The SDK's chat client throws on an `error` chunk (processUIMessageStream's onError), so the
 * stream is given up there and the `finish` after it, which carries the metadata, is never read:
 * a failed run's stream sends the metadata in a `message-metadata` chunk before its `error`, and
 * the assistant message carries `{stopReason: "error", stopDetail}` like every other ended run,
 * while the error text reaches `chat.error`. The resume stream (GET .../chat/stream) sends the same.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { assistant, NodeChat, until } from "../helpers/node-chat.js";
import { validateSchema } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

it("a chat whose run fails has stopReason error and the run's stopDetail in the message's metadata", async () => {
  server.upstream.enqueue({
    status: 400,
    errorBody: { error: { message: "model does not exist", type: "invalid_request_error", code: null, param: null } },
  });
  const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const chat = new NodeChat(`${server.url}/sessions/${sessionId}/chat`);
  await chat.sendMessage({ text: "hi" });
  await until("the run's end", () => chat.status === "ready" || chat.status === "error");

  const run = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items[0];
  expect(run).toMatchObject({ stopReason: "error", stopDetail: expect.stringContaining("MODEL_UPSTREAM") });
  // The failure is shown as the chat's error (this part works today).
  expect(chat.error?.message).toMatch(/model does not exist/);
  // The message of the run is on the page, its id the run's...
  const reply = assistant(chat);
  expect(reply?.id).toBe(run.id);
  // ...and, as for any ended run, why it stopped and what to do.
  expect(reply?.metadata).toEqual({ stopReason: "error", stopDetail: run.stopDetail });
});

/** The chunks of a UI message stream's body, `[DONE]` left out. */
const chunksOf = (body: string) =>
  body
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice("data: ".length)));

it("a failed run's stream, and its resume stream, send its metadata before the error, in chunks the spec describes", async () => {
  const requested = gate();
  const finishing = gate();
  // The reply streams its text, then (once the resume stream is open) ends filtered: the run fails.
  server.upstream.enqueue({
    text: "partial",
    finishReason: "content_filter",
    gate: finishing.wait,
    onRequest: () => requested.open(),
  });
  const sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const started = fetch(`${server.url}/sessions/${sessionId}/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] }),
  }).then((res) => res.text());
  await requested.wait;
  const resumed = await fetch(`${server.url}/sessions/${sessionId}/chat/stream`);
  expect(resumed.status).toBe(200);
  finishing.open();
  const [sent, replayed] = [chunksOf(await started), chunksOf(await resumed.text())];

  const run = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items[0];
  expect(run).toMatchObject({ stopReason: "error", stopDetail: expect.any(String) });
  const end = [
    { type: "message-metadata", messageMetadata: { stopReason: "error", stopDetail: run.stopDetail } },
    { type: "error", errorText: run.error.message },
    { type: "finish", finishReason: "error", messageMetadata: { stopReason: "error", stopDetail: run.stopDetail } },
  ];
  for (const chunks of [sent, replayed]) {
    for (const chunk of chunks) validateSchema("UiMessageChunk", chunk);
    expect(chunks.slice(-3)).toEqual(end);
  }
  expect(replayed).toEqual(sent);
});
