/**
 * agent_runs_live is "runs this process executes now" (README, Observability). It used to be
 * read from RunManager.liveCount, which is LiveRuns.size: the runs registered here PLUS the
 * slots reserved by starts still inserting their run. A start the database then refuses (409
 * SESSION_BUSY: the session already has an active run) never executed anything, yet while its
 * insert was in flight the gauge counted it as a live run; under a slow database every refused
 * start was a phantom live run. Now the gauge reads the registered runs only (LiveRuns.executing).
 */
import { afterEach, expect, it } from "vitest";
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

it("does not count a start whose insert the database is still deciding (and refuses) as a live run", async () => {
  let holdInserts = false;
  let insertsHeld = 0;
  const inserts = gate();
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "runs", (name, _args, call) => {
        if (name !== "create" || !holdInserts) return call();
        insertsHeld++;
        return inserts.wait.then(call);
      }),
  });
  const s = server;
  const session = await s.request("POST", "/sessions", { body: {} });
  const model = gate();
  s.upstream.enqueue({ text: "first", gate: model.wait });
  const running = await s.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "one" } });
  expect(running.status).toBe(201);
  expect((await scrape(s)).value("agent_runs_live")).toBe(1);

  // A second start on the busy session: its insert is on its way to the database.
  holdInserts = true;
  const refused = s.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "two" } });
  await until(
    () => insertsHeld,
    (n) => n === 1,
    "the second start's insert",
  );
  const duringInsert = (await scrape(s)).value("agent_runs_live");
  inserts.open();
  expect((await refused).status).toBe(409);
  model.open();
  expect((await finishedRun(s, running.body.id)).stopReason).toBe("complete");
  // One run executed here all along; the refused start never was one.
  expect(duringInsert).toBe(1);
});
