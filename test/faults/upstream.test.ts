import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeReply } from "../fakes/openai-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    env: { MODEL_MAX_RETRIES: "2", MODEL_REQUEST_TIMEOUT_MS: "300", MODEL_IDLE_TIMEOUT_MS: "300" },
  });
});
afterAll(async () => {
  await server.close();
});

/** Runs one run against the scripted replies; returns the finished run and the session's history. */
async function runWith(...replies: FakeReply[]) {
  server.upstream.requests.length = 0;
  server.upstream.enqueue(...replies);
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const res = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" } });
  expect(res.status).toBe(200);
  const history = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
  return { run: res.body.run, history, requests: server.upstream.requests.length };
}

describe("upstream faults end the run cleanly and visibly", () => {
  it("hangs before the first byte: bounded retries of the request timeout, then error MODEL_TIMEOUT", async () => {
    const hang: FakeReply = { hang: "before-headers" };
    const { run, history, requests } = await runWith(hang, hang, hang);
    expect(run.stopReason).toBe("error");
    expect(run.error.code).toBe("MODEL_TIMEOUT");
    expect(requests).toBe(3);
    expect(history.map((m: { role: string }) => m.role)).toEqual(["user"]);
  });

  it("stalls mid-stream: the idle timeout fails the turn and nothing partial is stored", async () => {
    const { run, history } = await runWith({ text: ["half an ans", "wer"], hang: "after-chunks", afterChunks: 2 });
    expect(run.error.code).toBe("MODEL_TIMEOUT");
    expect(history.map((m: { role: string }) => m.role)).toEqual(["user"]);
  });

  it("closes the connection mid-stream: error, no retry after the first chunk", async () => {
    const { run, history, requests } = await runWith({ text: ["a", "b"], destroy: true, afterChunks: 2 });
    expect(run.stopReason).toBe("error");
    expect(run.error.code).toBe("MODEL_UPSTREAM");
    expect(requests).toBe(1);
    expect(history).toHaveLength(1);
  });

  it("sends a malformed chunk: error MODEL_BAD_RESPONSE", async () => {
    const { run } = await runWith({ text: ["a"], malformed: true, afterChunks: 1 });
    expect(run.error.code).toBe("MODEL_BAD_RESPONSE");
  });

  it("answers 429 then 200: retried, and the run completes", async () => {
    const { run, requests } = await runWith({ status: 429 }, { text: "fine" });
    expect(run.stopReason).toBe("complete");
    expect(requests).toBe(2);
  });

  it("answers 500 forever: bounded retries, then error MODEL_UPSTREAM", async () => {
    const fail: FakeReply = { status: 500 };
    const { run, requests } = await runWith(fail, fail, fail);
    expect(run.error.code).toBe("MODEL_UPSTREAM");
    expect(run.error.message.length).toBeGreaterThan(10);
    expect(requests).toBe(3);
  });

  it("the finish reason `length` is an error naming the token limit, nothing committed", async () => {
    const { run, history } = await runWith({ text: "cut", finishReason: "length" });
    expect(run.error).toEqual({ code: "MODEL_LENGTH", message: "model output reached the token limit" });
    expect(history).toHaveLength(1);
  });
});
