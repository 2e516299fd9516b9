/**
 * A stream (the AI SDK's UI message stream, or a run's events) whose read of the run's stored
 * events fails midway (the database went away: a PostgreSQL failover, a locked or full SQLite
 * file). The SDK takes a clean end of the response for the end of the answer (README, "useChat":
 * that is why a shutdown cuts the chat's stream instead of ending it), so a stream that cannot
 * go on must not end as a complete answer: it is cut (the SDK's status is `error`, and
 * `resumeStream()` picks the run up; an EventSource reconnects with Last-Event-ID), what was
 * sent before it still delivered.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { openSse } from "../helpers/sse-client.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
const logs = capturedLogs();
/** The next reads of stored events to let through before one fails; null: none fails. */
let failAfter: number | null = null;
beforeAll(async () => {
  server = await startTestServer({
    logger: logs.logger,
    wrapStore: (store) =>
      aroundStore(store, "events", (name, _args, call) => {
        if (name === "afterWithin" && failAfter !== null) {
          if (failAfter === 0) {
            failAfter = null;
            return Promise.reject(new StorageError("unavailable", "the database cannot be reached"));
          }
          failAfter--;
        }
        return call();
      }),
  });
});
afterAll(() => server?.close());

/** A session whose run holds a reply of 700 pieces before its end: its stored events take two pages (500 a page). */
async function longRun(): Promise<{ sessionId: string; runId: string; finish: () => void }> {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const pieces = Array.from({ length: 700 }, (_, i) => `w${i} `);
  server.upstream.enqueue({ text: pieces, gate });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await until(
    async () => (await server.ctx.store.events.after(run.id, 0)).length,
    (n) => n > 600,
    "the reply's pieces to be stored",
  );
  return { sessionId: session.id, runId: run.id, finish };
}

it("a chat stream whose stored events cannot be read on is cut, not ended as the whole answer", async () => {
  const { sessionId, finish } = await longRun();
  try {
    // useChat's resume: the first page is read and sent, the second read fails.
    failAfter = 1;
    const chat = await openSse(`${server.url}/sessions/${sessionId}/chat/stream`);
    expect(chat.status).toBe(200);
    await chat.ended;
    const chunks = chat.events.map((e) => e.json ?? e.data);
    // Part of the answer went out before the failure.
    expect(chunks.some((c) => c?.type === "text-delta")).toBe(true);
    const saidError = chunks.some((c) => c?.type === "error");
    // Not a clean end that the SDK would take for the whole answer.
    expect({ cleanEnd: chat.complete(), saidError }).not.toEqual({ cleanEnd: true, saidError: false });
  } finally {
    failAfter = null;
    finish();
  }
});

it("a run's event stream whose stored events cannot be read on is cut after what it sent, not ended", async () => {
  const { runId, finish } = await longRun();
  try {
    failAfter = 1;
    const stream = await openSse(`${server.url}/runs/${runId}/events`);
    expect(stream.status).toBe(200);
    await stream.ended;
    // The first page went out whole, in order, before the cut.
    expect(stream.events.map((e) => Number(e.id))).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    expect(stream.complete()).toBe(false);
    // The failure is logged, as an error.
    await until(
      () => logs.lines.filter((line) => line.includes('"type":"StorageError"')),
      (lines) => lines.some((line) => line.includes('"level":50')),
      "the failure to be logged",
    );
  } finally {
    failAfter = null;
    finish();
  }
});
