import { afterEach, expect, it } from "vitest";
import { FaultyStore } from "../fakes/faulty-store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

/** How long a run's end may fail to be stored before it is reported anyway, in this test. */
const FINISH_REPORT_MS = 300;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a run whose end could not be stored, taken over by another instance meanwhile, is given up here once storage works again", async () => {
  let faulty!: FaultyStore;
  server = await startTestServer({
    backend: "postgres",
    finishReportMs: FINISH_REPORT_MS,
    wrapStore: (store) => {
      faulty = new FaultyStore(store);
      return faulty.store;
    },
  });
  let release!: () => void;
  let arrived!: () => void;
  const requested = new Promise<void>((r) => (arrived = r));
  server.upstream.enqueue({
    text: ["done"],
    gate: new Promise<void>((r) => (release = r)),
    onRequest: () => arrived(),
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const waiting = server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" } });
  await requested;
  faulty.failWrites("io");
  release();
  // Its end is reported although it is not stored; this process keeps trying to store it.
  const answered = await waiting;
  expect(answered.body.run.error.code).toBe("PERSISTENCE_FAILED");
  const runId: string = answered.body.run.id;
  expect(server.ctx.manager.executes(runId)).toBe(true);

  // Another instance claims the run (this one could not renew its lease in time).
  const [claimed] = await faulty.inner.leases.claim({ owner: "inst-other", ttlMs: 60_000, limit: 10, scope: "all" });
  expect(claimed?.record.id).toBe(runId);
  faulty.heal();

  // Its next try is fenced: the run is the other instance's now, and this process lets it go.
  const manager = server.ctx.manager;
  await until(
    () => manager.executes(runId),
    (executes) => !executes,
    "the run to be given up here",
  );
  const stored = await faulty.inner.runs.get(runId);
  expect(stored?.status).not.toBe("finished");
});
