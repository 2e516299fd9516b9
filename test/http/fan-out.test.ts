import type { ServerResponse } from "node:http";
import { connect } from "node:net";
import { afterEach, beforeEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer({ sseHeartbeatMs: 10, env: { MODEL_MAX_OUTPUT_CHARS: String(32 << 20) } });
});
afterEach(async () => {
  await server.close();
});

/** A run whose model answers `text`, then waits on the returned gate before it finishes. */
async function gatedRun(text: string[]) {
  const finish = gate();
  server.upstream.enqueue({ text, gate: finish.wait });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  return { runId: run.id as string, finish };
}

it("many watchers of one run get the same gapless events, with heartbeats between them, in well-formed bodies", async () => {
  const { runId, finish } = await gatedRun(["one ", "two ", "three"]);
  const watchers = await Promise.all(Array.from({ length: 20 }, () => openSse(`${server.url}/runs/${runId}/events`)));
  for (const w of watchers) await w.waitFor((e) => e.event === "text.delta" && e.json.text === "three");
  // While the run waits, heartbeats go through the response between the events' direct writes.
  await until(
    () => watchers.every((w) => w.comments.length > 0),
    (all) => all,
    "a heartbeat on every stream",
  );
  finish.open();
  const streams = await Promise.all(watchers.map((w) => w.ended));
  const first = streams[0]?.map((e) => `${e.id} ${e.event} ${e.data}`);
  expect(first?.at(-1)).toMatch(/^\d+ run\.finished /);
  expect(streams[0]?.map((e) => Number(e.id))).toEqual(streams[0]?.map((_, i) => i + 1));
  for (const [i, events] of streams.entries()) {
    expect(events.map((e) => `${e.id} ${e.event} ${e.data}`)).toEqual(first);
    expect(watchers[i]?.complete()).toBe(true);
    expect(watchers[i]?.comments.some((c) => c.includes("heartbeat"))).toBe(true);
  }
});

it("a watcher that disconnects is cleaned up: its subscription and open stream go, the others carry on", async () => {
  const { runId, finish } = await gatedRun(["a", "b"]);
  const watchers = await Promise.all(Array.from({ length: 3 }, () => openSse(`${server.url}/runs/${runId}/events`)));
  for (const w of watchers) await w.waitFor((e) => e.event === "text.delta" && e.json.text === "b");
  expect(server.ctx.hub.watcherCount(runId)).toBe(3);
  expect(server.app.openStreams.size).toBe(3);
  watchers[0]?.close();
  watchers[1]?.close();
  await until(
    () => [server.ctx.hub.watcherCount(runId), server.app.openStreams.size],
    ([watching, open]) => watching === 1 && open === 1,
    "the closed streams to be cleaned up",
  );
  finish.open();
  const events = await watchers[2]?.ended;
  expect(events?.at(-1)?.event).toBe("run.finished");
  expect(server.ctx.hub.watcherCount(runId)).toBe(0);
});

it("a watcher that stops reading stalls no one, and the server holds bounded bytes for it until it reads again", async () => {
  // 8 MB of text in 4 KB deltas, then the message repeating it: far more than the socket's buffers take from a client that does not read.
  const piece = "x".repeat(4096);
  const { runId, finish } = await gatedRun(Array.from({ length: 2048 }, () => piece));
  let stalledResponse: ServerResponse | null = null;
  server.app.server.on("request", (req, res) => {
    if (req.headers["x-test-stalled"] === "1") stalledResponse = res;
  });
  // A raw socket that never reads until told: the kernel's buffers for it stay small.
  let stalledBody = "";
  const { port } = new URL(server.url);
  const stalled = connect({ host: "127.0.0.1", port: Number(port) });
  stalled.pause();
  stalled.setEncoding("latin1");
  stalled.on("data", (part) => (stalledBody += part));
  const stalledEnded = new Promise<void>((resolve) => stalled.on("close", () => resolve()));
  stalled.write(
    `GET /runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n` +
      "X-Test-Stalled: 1\r\nConnection: close\r\n\r\n",
  );
  await until(
    () => stalledResponse,
    (res) => res !== null,
    "the stalled watcher's request",
  );
  let maxBacklog = 0;
  const sampler = setInterval(() => {
    maxBacklog = Math.max(maxBacklog, stalledResponse?.writableLength ?? 0);
  }, 5);
  try {
    const others = await Promise.all(Array.from({ length: 3 }, () => openSse(`${server.url}/runs/${runId}/events`)));
    finish.open();
    for (const events of await Promise.all(others.map((w) => w.ended))) {
      expect(events.at(-1)?.event).toBe("run.finished");
      const text = events.filter((e) => e.event === "text.delta").map((e) => e.json.text as string);
      expect(text.join("").length).toBe(2048 * 4096);
    }
  } finally {
    clearInterval(sampler);
  }
  // A live feed for it would have queued the whole run (8 MB of deltas, then the message repeating them).
  expect(maxBacklog).toBeGreaterThan(0);
  expect(maxBacklog).toBeLessThan(6 << 20);
  // Reading again, it gets every event, gapless, from the database at its own pace.
  stalled.resume();
  await stalledEnded;
  const ids = [...stalledBody.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  expect(ids).toEqual(ids.map((_, i) => i + 1));
  expect(stalledBody).toMatch(/event: run\.finished\n/);
  // 16 MB through the store and four watchers: ~2.5 s alone, several times that under the whole
  // suite's load on 2 cores.
}, 60_000);
