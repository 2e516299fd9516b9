import { afterAll, beforeAll, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
/** Set: the run's end (its commit with the finish) waits until this resolves. */
let endHeld: Promise<void> | null = null;
let endWaiting = false;

beforeAll(async () => {
  server = await startTestServer({
    wrapStore: (store): Store => ({
      ...store,
      commitRun: async (runId, changes, events, fence) => {
        if (endHeld && changes.some((change) => change.kind === "finish")) {
          endWaiting = true;
          await endHeld;
        }
        return store.commitRun(runId, changes, events, fence);
      },
    }),
  });
});
afterAll(() => server?.close());

it("a stream opened while a run's end is being written gets that end, though the run does not read finished before it is stored", async () => {
  let release = () => {};
  endHeld = new Promise((resolve) => (release = resolve));
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
  await until(
    () => endWaiting,
    (waiting) => waiting,
    "the run's end to be held",
  );
  // The run is ending here, its run.finished not stored: GET /runs/{id} does not show it
  // finished yet (a client would then read the messages without the final reply).
  expect((await server.request("GET", `/runs/${run.id}`)).body.status).toBe("running");
  const resumed = await openSse(`${server.url}/runs/${run.id}/events`, { headers: { "last-event-id": "1" } });
  const fromStart = await openSse(`${server.url}/runs/${run.id}/events`);
  release();
  for (const stream of [resumed, fromStart]) {
    const events = await stream.ended;
    expect(events.at(-1)?.event).toBe("run.finished");
  }
  endHeld = null;
});
