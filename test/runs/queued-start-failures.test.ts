/**
 * Starting a queued run marks it `running` with this process's lease, then reads what its
 * execution needs (the session, the session's last message seq). A read failing there left the
 * run `running` with nothing executing it: over SQLite nothing reaps it before a restart, so the
 * session stayed busy (409) and a DELETE answered 202 with no `run.finished` ever following.
 * Now such a run is executed (the last message seq is read at its first write, where a failure
 * is the run's own) or ended `error` at once.
 */
import { afterEach, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import type { Store } from "../../src/store/store.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close().catch(() => {});
  server = undefined;
});

it.each([
  ["messages", "lastSeq"],
  ["sessions", "get"],
] as const)(
  "a queued run whose start meets a failing %s.%s read ends (or runs), and the session is usable again",
  async (part, read) => {
    let failNext = false;
    server = await startTestServer({
      wrapStore: (store: Store) =>
        aroundStore(store, part, (name, _args, call) => {
          if (name === read && failNext) {
            failNext = false;
            return Promise.reject(new StorageError("io", "disk I/O error (injected, once)"));
          }
          return call();
        }),
    });
    const s = server;
    s.upstream.fallback = () => ({ text: "ok" });
    let open!: () => void;
    s.upstream.enqueue({ text: "first answer", gate: new Promise<void>((resolve) => (open = resolve)) });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const start = (input: string, ifBusy?: string) =>
      s.request("POST", `/sessions/${session.id}/runs`, { body: { input, ...(ifBusy ? { ifBusy } : {}) } });
    const first = (await start("first")).body;
    await until(
      () => s.upstream.requests.length,
      (n) => n === 1,
      "the first model request",
    );
    const queued = (await start("second", "enqueue")).body;
    expect(queued.status).toBe("queued");
    failNext = true;
    open();
    await finishedRun(s, first.id);
    const ended = await finishedRun(s, queued.id);
    expect(failNext).toBe(false);
    expect(["complete", "error"]).toContain(ended.stopReason);
    const next = await start("third");
    expect(next.status).toBe(201);
    expect((await finishedRun(s, next.body.id)).stopReason).toBe("complete");
  },
);
