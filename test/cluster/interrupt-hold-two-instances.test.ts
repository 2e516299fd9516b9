/**
 * Interrupting starts of one session on two instances at once: A's start (instance 1) has held
 * the queue and cancelled the active run, its insert is on its way (a slow round trip); B's
 * start (instance 2) holds it too, finds no active run, inserts its run, which answers at once
 * and ends. B's release of the hold must not free the queue under A: the queued run would
 * start in the place of A's run, and A, which cancelled the run before, answered 409.
 */
import { afterEach, expect, it, onTestFinished } from "vitest";
import type { RunRecord } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close();
});

it("a hold taken by an interrupting start on another instance is not freed by a later start's release there", async () => {
  const insertA = gate();
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  const one = await startTestServer({
    pgUrl: database.url,
    wrapStore: (store) =>
      aroundStore(store, "runs", (name, args, call) =>
        name === "create" && (args[0] as RunRecord).input === "a" ? insertA.wait.then(call) : call(),
      ),
  });
  servers.push(one);
  const two = await startTestServer({ pgUrl: database.url, upstream: one.upstream });
  servers.push(two);
  const never = gate();
  one.upstream.enqueue({ text: "x answer", gate: never.wait }, { text: "b answer" });
  one.upstream.fallback = () => ({ text: "ok" });

  const session = (await one.request("POST", "/sessions", { body: {} })).body;
  const startOn = (s: TestServer, body: Record<string, unknown>) =>
    s.request("POST", `/sessions/${session.id}/runs`, { body });
  const x = (await startOn(one, { input: "x" })).body;
  await until(
    () => one.upstream.requests.length,
    (n) => n === 1,
    "x's model request",
  );
  const q = (await startOn(one, { input: "q", ifBusy: "enqueue" })).body;
  expect(q.status).toBe("queued");

  const a = startOn(one, { input: "a", ifBusy: "interrupt" });
  await finishedRun(one, x.id);
  const b = await startOn(two, { input: "b", ifBusy: "interrupt" });
  expect(b.status).toBe(201);
  await finishedRun(two, b.body.id);
  // Let the end of B's run move the queue on, wherever it is moved.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const queuedRun = (await one.request("GET", `/runs/${q.id}`)).body.status;
  insertA.open();
  const aAnswer = await a;
  never.open();
  expect({ queuedRun, interrupt: aAnswer.status, code: aAnswer.body?.error?.code }).toEqual({
    queuedRun: "queued",
    interrupt: 201,
    code: undefined,
  });
}, 30_000);
