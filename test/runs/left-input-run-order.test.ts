/**
 * A run queued from a steer's input left on a run that ended without it (by a restart's
 * recovery, or a steer whose start was refused) took its id from the input's: for a steer with
 * an Idempotency-Key that is a hash of the key, not an id made from the time, so the run sorted
 * before every later run in "newest first" lists for good. Now it gets an id of its own time,
 * and a retried steer still finds it. (Here the end of the run it was left on queues it.)
 */
import { afterEach, expect, it } from "vitest";
import { runOfLeftInput } from "../../src/runs/queue.js";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a run queued from a keyed steer's left input is listed in the order runs were made", async () => {
  server = await startTestServer();
  const s = server;
  const held = gate();
  s.upstream.enqueue({ text: "first", gate: held.wait });
  s.upstream.fallback = () => ({ text: "ok" });
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  const first = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "first" } })).body;
  // A keyed steer's input (its id a hash: here the last in sort order) left on the run, which is then cancelled.
  const inputId = `msg_${"z".repeat(26)}`;
  expect(
    await s.ctx.store.inputs.add({
      id: inputId,
      runId: first.id,
      content: "steered",
      createdAt: new Date().toISOString(),
    }),
  ).toBe(true);
  await s.request("DELETE", `/runs/${first.id}`);
  held.open();
  await finishedRun(s, first.id);
  // The run's end queues the input it left (no request waits for it) as a run of its own, and starts it.
  const queued = await until(
    () => runOfLeftInput(s.ctx.store, { sessionId: session.id, inputId, input: "" }),
    (made) => made !== null,
    "the left input queued as a run",
  );
  await finishedRun(s, queued?.id ?? "?");
  const later = (await s.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "later" } })).body;
  const listed = (await s.request("GET", `/sessions/${session.id}/runs`)).body.items.map((r: { id: string }) => r.id);
  expect(listed).toEqual([later.run.id, queued?.id, first.id]);
});
