import { afterEach, describe, expect, it } from "vitest";
import { FaultyStore } from "../fakes/faulty-store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** How long a run's end may fail to be stored before it is reported anyway, in this test. */
const FINISH_REPORT_MS = 300;

let server: TestServer;
let faulty: FaultyStore;
afterEach(async () => {
  faulty.heal();
  await server.close();
});

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("a queued run waited for (?wait=true) that starts here and cannot store its end is answered with the end reported, as a run started at once is", async () => {
    let releaseFirst!: () => void;
    let releaseSecond!: () => void;
    let secondAsked!: () => void;
    const asked = new Promise<void>((resolve) => {
      secondAsked = resolve;
    });
    const replies = [
      { text: "first", gate: new Promise<void>((resolve) => (releaseFirst = resolve)) },
      {
        text: "second",
        gate: new Promise<void>((resolve) => (releaseSecond = resolve)),
        onRequest: () => secondAsked(),
      },
    ];
    server = await startTestServer({
      backend,
      finishReportMs: FINISH_REPORT_MS,
      wrapStore: (store) => {
        faulty = new FaultyStore(store);
        return faulty.store;
      },
    });
    server.upstream.enqueue(...replies);
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const first = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "one" } })).body;
    const waiting = server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "two", ifBusy: "enqueue" },
    });
    releaseFirst();
    // The queued run starts here once the first ends; then nothing can be stored any more.
    await asked;
    faulty.failWrites("full");
    const failedAt = Date.now();
    releaseSecond();

    const answered = await Promise.race([
      waiting,
      new Promise<null>((resolve) => setTimeout(() => resolve(null), FINISH_REPORT_MS + 5000)),
    ]);
    expect(answered, "the wait answered").not.toBeNull();
    expect(answered?.status).toBe(200);
    expect(answered?.body.run).toMatchObject({ status: "finished", stopReason: "error" });
    expect(answered?.body.run.id).not.toBe(first.id);
    expect(answered?.body.run.error.code).toBe("PERSISTENCE_FAILED");
    expect(Date.now() - failedAt).toBeLessThan(FINISH_REPORT_MS + 3000);
  });
});
