import { afterEach, expect, it } from "vitest";
import type { RunRecord } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

// An interrupting start's release of the session's queue hold freed the hold a second
// interrupting start took meanwhile. The second one's interrupted run then ended with the queue
// free, and the queued run started in the interrupting run's place: the interrupting start was
// answered 409 SESSION_BUSY although it cancelled the run (the README: the new run starts "ahead
// of any queued run"). Now the hold counts its holders and is freed when the last is out. The
// first start's release is delayed here to widen the window (a slow round trip).
it("an interrupt's hold is not released by an earlier interrupt finishing: the queued run does not take its place", async () => {
  const releaseA = gate();
  const insertB = gate();
  let releases = 0;
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "runs", (name, args, call) => {
        if (name === "releaseQueue" && releases++ === 0) return releaseA.wait.then(call);
        if (name === "create" && (args[0] as RunRecord).input === "b") return insertB.wait.then(call);
        return call();
      }),
  });
  const s = server;
  const never = gate();
  const qHeld = gate();
  s.upstream.enqueue(
    { text: "x answer", gate: never.wait },
    { text: "a answer", gate: never.wait },
    { text: "q answer", gate: qHeld.wait },
  );
  s.upstream.fallback = () => ({ text: "ok" });
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  const start = (body: Record<string, unknown>) => s.request("POST", `/sessions/${session.id}/runs`, { body });
  const x = (await start({ input: "x" })).body;
  await until(
    () => s.upstream.requests.length,
    (n) => n === 1,
    "x's model request",
  );
  const q = (await start({ input: "q", ifBusy: "enqueue" })).body;
  expect(q.status).toBe("queued");
  const a = start({ input: "a", ifBusy: "interrupt" });
  await until(
    () => s.upstream.requests.length,
    (n) => n === 2,
    "a's model request",
  );
  const ra = (await s.request("GET", `/sessions/${session.id}`)).body.activeRunId as string;
  expect(ra).not.toBe(x.id);
  const b = start({ input: "b", ifBusy: "interrupt" });
  await finishedRun(s, ra);
  releaseA.open();
  expect((await a).status).toBe(201);
  // Let the first start's queue pass run.
  await new Promise((r) => setTimeout(r, 300));
  const qNow = (await s.request("GET", `/runs/${q.id}`)).body.status;
  insertB.open();
  const bAnswer = await b;
  qHeld.open();
  never.open();
  expect({ queuedRun: qNow, interrupt: bAnswer.status, code: bAnswer.body?.error?.code }).toEqual({
    queuedRun: "queued",
    interrupt: 201,
    code: undefined,
  });
}, 30_000);
