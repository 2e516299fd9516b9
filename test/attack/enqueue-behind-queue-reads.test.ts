/**
 * A session's run waits for an approval and runs of ~1 MB are queued behind it (`ifBusy:
 * "enqueue"`). One more enqueue of a few bytes asked twice whether the session had queued runs
 * (before its insert, and at the start of the queue after it) by reading every queued run whole,
 * input and all: N MB read on the event loop per enqueue, and building a queue of N runs read
 * N²/2 MB. Now those checks ask only whether one exists, and a start reads only the oldest.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const QUEUED = 10;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("an enqueue behind a queue of runs of 1 MB", () => {
  it("reads neither the queued runs nor their inputs", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ wrapStore: reads.wrap });
    server = s;
    s.upstream.enqueue({
      toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
    });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const runs = `/sessions/${session.id}/runs`;
    const run = (await s.request("POST", runs, { body: { input: "w" } })).body;
    await until(
      async () => (await s.request("GET", `/runs/${run.id}`)).body.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    for (let i = 0; i < QUEUED; i++) {
      const queued = await s.request("POST", runs, {
        body: { input: `${i}`.padEnd(1_000_000, "q"), ifBusy: "enqueue" },
      });
      expect(queued.status).toBe(201);
      expect(queued.body.status).toBe("queued");
    }

    reads.counting = true;
    const last = await s.request("POST", runs, { body: { input: "8 bytes.", ifBusy: "enqueue" } });
    reads.counting = false;
    expect(last.status).toBe(201);
    expect(last.body.status).toBe("queued");
    console.log(`an enqueue behind ${QUEUED} runs of 1 MB: ${Math.round(reads.bytes / 1000)} KB read from the store`);
    expect(reads.bytes, reads.calls.join("\n")).toBeLessThan(2_000_000);
  }, 60_000);
});
