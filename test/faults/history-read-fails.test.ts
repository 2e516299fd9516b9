/**
 * A start whose session history cannot be read once the run is stored (a corrupt row, storage
 * failing for a moment): the run is the one that fails, ended with the error and stored as
 * finished, and the session takes the next run. The history read once had moved before the
 * run's execution, out of its error handling: the start answered 500 and left the run stored
 * `running`, executed by nobody, so the session stayed busy until a restart. The same held
 * when the read of the session's last message seq failed too (the recorder's, as it opened).
 */
import { afterEach, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a history that cannot be read fails the run, not the start, and the session takes the next run", async () => {
  let failures = 0;
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "messages", (name, _args, call) => {
        if (name === "history" && failures > 0) {
          failures--;
          return Promise.reject(new StorageError("io", "disk I/O error"));
        }
        return call();
      }),
  });
  const s = server;
  s.upstream.enqueue({ text: "hello" });
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  const runs = `/sessions/${session.id}/runs?wait=true`;
  // Both reads of the start fail: the one before the recorder opens and the execution's.
  failures = 2;
  const failed = await s.request("POST", runs, { body: { input: "first" } });
  expect(failed.status).toBe(200);
  expect(failed.body.run.stopReason).toBe("error");
  expect(failed.body.run.status).toBe("finished");
  const next = await s.request("POST", runs, { body: { input: "second" } });
  expect(next.status).toBe(200);
  expect(next.body.run.stopReason).toBe("complete");
  expect(next.body.text).toBe("hello");
  // The run read its history from the execution once the first read failed: it saw the second input alone.
  failures = 1;
  s.upstream.enqueue({ text: "again" });
  const third = await s.request("POST", runs, { body: { input: "third" } });
  expect(third.body.run.stopReason).toBe("complete");
  const sent = s.upstream.requests.at(-1)?.body.messages.map((m: { content: string }) => m.content);
  expect(sent).toEqual(["second", "hello", "third"]);
});

it("a start whose history and last message seq cannot be read still executes its run, which fails; the session takes the next run", async () => {
  let historyFailures = 0;
  let lastSeqFailures = 0;
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "messages", (name, _args, call) => {
        if (name === "history" && historyFailures > 0) {
          historyFailures--;
          return Promise.reject(new StorageError("io", "disk I/O error"));
        }
        if (name === "lastSeq" && lastSeqFailures > 0) {
          lastSeqFailures--;
          return Promise.reject(new StorageError("io", "disk I/O error"));
        }
        return call();
      }),
  });
  const s = server;
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  const runs = `/sessions/${session.id}/runs?wait=true`;
  historyFailures = 2;
  lastSeqFailures = 1;
  const failed = await s.request("POST", runs, { body: { input: "first" } });
  expect(failed.status).toBe(200);
  expect(failed.body.run.status).toBe("finished");
  expect(failed.body.run.stopReason).toBe("error");
  expect(lastSeqFailures).toBe(0);
  s.upstream.enqueue({ text: "hello" });
  const next = await s.request("POST", runs, { body: { input: "second" } });
  expect(next.status).toBe(200);
  expect(next.body.run.stopReason).toBe("complete");
  const messages = (await s.request("GET", `/sessions/${session.id}/messages`)).body;
  expect(messages.items.map((m: { seq: number }) => m.seq)).toEqual([1, 2]);
});
