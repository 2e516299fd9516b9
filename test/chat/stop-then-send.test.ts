/**
 * `useChat`'s stop() then a new message at once (the AI SDK's own chat client): stop() closes
 * the stream, which cancels the run, and resolves before the server has seen the close, so the
 * next message can arrive while the session's run still counts as active. It starts once the
 * stopped run has ended; a run that goes on still makes the session busy.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { assistant, NodeChat, texts, until } from "../helpers/node-chat.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

it("a message sent right after stop() starts a new run: the stopped one does not hold the session", async () => {
  const hold = gate();
  try {
    server.upstream.enqueue({ text: ["never ", "finished"], gate: hold.wait }, { text: "second" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const chat = new NodeChat(`${server.url}/sessions/${session.id}/chat`);
    void chat.sendMessage({ text: "go" });
    await until("streamed text", () => texts(assistant(chat)).startsWith("never"));
    await chat.stop();
    await chat.sendMessage({ text: "something else" });
    await until("the answer", () => chat.status !== "submitted" && chat.status !== "streaming");
    expect(chat.error).toBeUndefined();
    expect(texts(assistant(chat))).toBe("second");
    const runs = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items;
    expect(runs.map((r: { stopReason: string }) => r.stopReason).sort()).toEqual(["aborted", "complete"]);
  } finally {
    hold.open();
  }
});

it("a message while the session's run goes on (another tab's) is still refused as busy", async () => {
  const hold = gate();
  try {
    server.upstream.enqueue({ text: ["long ", "answer"], gate: hold.wait });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const first = new NodeChat(`${server.url}/sessions/${session.id}/chat`);
    void first.sendMessage({ text: "go" });
    await until("streamed text", () => texts(assistant(first)).startsWith("long"));
    const other = new NodeChat(`${server.url}/sessions/${session.id}/chat`);
    await other.sendMessage({ text: "me too" });
    await until("the refusal", () => other.status === "error");
    expect(other.error?.message).toMatch(/SESSION_BUSY/);
  } finally {
    hold.open();
  }
});
