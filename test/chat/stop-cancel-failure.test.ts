/**
 * useChat's stop() (the client closing the chat stream) cancels the run. That cancel was neither
 * awaited nor given a rejection handler (the `try/catch` around it caught nothing), so a cancel
 * that failed (the store failing, the run gone) became an unhandled promise rejection and the
 * failed stop was told to nobody. Now its failure is handled: logged with the run's id.
 */
import http from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { gate, settle } from "../fakes/gate.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
const { lines, logger } = capturedLogs();
/** When set: the store's runs.access of this run fails (a store hiccup). */
let failAccessOf: string | null = null;

beforeAll(async () => {
  server = await startTestServer({
    logger,
    wrapStore: (store: Store) => {
      const access = store.runs.access.bind(store.runs);
      store.runs.access = (async (runId: string, ...rest: unknown[]) => {
        if (failAccessOf === runId) throw new Error("the database is unavailable");
        return (access as (...a: unknown[]) => unknown)(runId, ...rest);
      }) as typeof store.runs.access;
      return store;
    },
  });
});
afterAll(async () => {
  await server?.close();
});

it("a chat stop whose cancel fails is logged with the run's id, not left an unhandled promise rejection", async () => {
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  process.on("unhandledRejection", onRejection);
  const runs = server.ctx.runs;
  const cancel = runs.cancel;
  // The cancel's failure, seen by the test; the server gets a promise of its own, which rejects
  // with it: left unhandled there, it is reported once the turn it rejected in is done.
  const failed = gate<unknown>();
  runs.cancel = (runId, owner) =>
    new Promise<Awaited<ReturnType<typeof cancel>>>((resolve, reject) => {
      cancel.call(runs, runId, owner).then(resolve, (err) => {
        reject(err);
        failed.open(err);
      });
    });
  const hold = gate();
  try {
    server.upstream.enqueue({ text: ["thinking ", "about it"], gate: hold.wait });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const body = JSON.stringify({ messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "go" }] }] });
    const req = http.request(`${server.url}/sessions/${session.id}/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
    });
    req.on("error", () => {});
    let received = "";
    req.on("response", (res) => {
      res.on("error", () => {});
      res.on("data", (part: Buffer) => {
        received += part.toString();
      });
    });
    req.end(body);
    await until(
      () => received,
      (text) => text.includes("about it"),
      "the streamed text",
    );
    const run = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items[0];
    failAccessOf = run.id;
    // useChat's stop(): the stream is closed; the server cancels the run, and that cancel fails.
    req.destroy();
    expect(String(await failed.wait)).toContain("the database is unavailable");
    // The turn the cancel failed in is done: an unhandled rejection of it has been reported.
    await settle();
    expect(rejections.map((r) => String(r))).toEqual([]);
    const logged = lines
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.runId === run.id && entry.level === 40);
    expect(logged.map((entry) => entry.err?.message)).toEqual(["the database is unavailable"]);
  } finally {
    process.off("unhandledRejection", onRejection);
    runs.cancel = cancel;
    failAccessOf = null;
    hold.open();
  }
}, 30_000);
