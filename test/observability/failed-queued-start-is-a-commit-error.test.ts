/**
 * agent_store_commit_duration_seconds{outcome="error"} is the series the README says to alert
 * on: "the runs' writes to the database ... error, failed". A queued run's start is such a
 * write (it is timed as `commit_run` when it succeeds: the run's status, lease and
 * `run.started`), but when the database failed it the observed store reported nothing
 * (observed-seams.ts observeStart: "A start that ... fails ... is not reported"): a database
 * refusing every queued start left the error series at 0 while the session's queue was stuck.
 * Now such a start is a `commit_run` whose outcome is `error` (`conflict` when a rule of the
 * data refuses it), naming no run.
 */
import { afterEach, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import { gate } from "../fakes/gate.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const scrape = async (s: TestServer) => new Exposition(await (await fetch(`${s.url}/metrics`)).text());

it("counts a queued run's start the database failed as a commit error", async () => {
  let failStarts = false;
  let failedStarts = 0;
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "runs", (name, _args, call) => {
        if (name !== "startQueued" || !failStarts) return call();
        failedStarts++;
        return Promise.reject(new StorageError("io", "disk I/O error"));
      }),
  });
  const s = server;
  const session = await s.request("POST", "/sessions", { body: {} });
  const first = gate();
  s.upstream.enqueue({ text: "first", gate: first.wait });
  const running = await s.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "one" } });
  expect(running.status).toBe(201);
  const queued = await s.request("POST", `/sessions/${session.body.id}/runs`, {
    body: { input: "two", ifBusy: "enqueue" },
  });
  expect(queued.status).toBe(201);
  expect(queued.body.status).toBe("queued");

  const errorsBefore = (await scrape(s)).histogram("agent_store_commit_duration_seconds", {
    operation: "commit_run",
    outcome: "error",
  }).count;
  failStarts = true;
  first.open();
  expect((await finishedRun(s, running.body.id)).stopReason).toBe("complete");
  await until(
    () => failedStarts,
    (n) => n > 0,
    "the queued run's start to be tried and fail",
  );
  // The queued run was not started: the write failed.
  expect((await s.request("GET", `/runs/${queued.body.id}`)).body.status).toBe("queued");

  // Read before the scrape: a later try of the start, if any, only adds to what must be counted.
  const tried = failedStarts;
  const m = await scrape(s);
  const errors = m.histogram("agent_store_commit_duration_seconds", {
    operation: "commit_run",
    outcome: "error",
  }).count;
  // Every start the database failed is a failed write of the run: at least those tried so far.
  expect(errors - errorsBefore).toBeGreaterThanOrEqual(tried);
});
