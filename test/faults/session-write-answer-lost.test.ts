/**
 * A session's insert or delete whose answer was lost after it was sent (a connection lost, or a
 * timeout firing, right after the COMMIT: StorageError.outcomeUnknown, as the PostgreSQL store
 * reports it), while the database stays unreachable for the read-back. Before, a create removed
 * the workspace of a session that was stored after all (every tool of its runs then failed
 * WORKSPACE_UNAVAILABLE), and a delete that was done left the session's directory for good (a
 * retried DELETE answered 404 and removed nothing). Now the create keeps the directory unless
 * the session is known not to be stored, and a DELETE that finds no session removes the
 * directory a session that no longer exists left.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import type { Store } from "../../src/store/store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const answerLost = () =>
  new StorageError("unavailable", "Connection terminated unexpectedly", { outcomeUnknown: true });

/** The store with `write` done and then answered as lost, and every read-back failing while `down`. */
function losingAnswers(store: Store, write: "insert" | "delete", state: { down: boolean }): Store {
  return {
    ...store,
    sessions: {
      ...store.sessions,
      [write]: async (...args: unknown[]) => {
        await (store.sessions[write] as (...a: unknown[]) => Promise<unknown>)(...args);
        state.down = true;
        throw answerLost();
      },
      access: async (id: string) => {
        if (state.down) throw answerLost();
        return store.sessions.access(id);
      },
    },
  };
}

it("a session stored although its insert's answer was lost keeps its workspace", async () => {
  const state = { down: false };
  server = await startTestServer({ wrapStore: (store) => losingAnswers(store, "insert", state) });
  const res = await server.request("POST", "/sessions", { body: {} });
  expect(res.status).toBe(503);
  state.down = false;
  const [stored] = (await server.request("GET", "/sessions")).body.items as { id: string }[];
  expect(stored).toBeDefined();
  expect(existsSync(join(server.dir, "workspaces", stored?.id ?? "?"))).toBe(true);
});

it("a session deleted although its delete's answer was lost has its workspace removed by a retried DELETE", async () => {
  const state = { down: false };
  server = await startTestServer({ wrapStore: (store) => losingAnswers(store, "delete", state) });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const directory = join(server.dir, "workspaces", session.id);
  expect(existsSync(directory)).toBe(true);
  expect((await server.request("DELETE", `/sessions/${session.id}`)).status).toBe(503);
  state.down = false;
  expect((await server.request("DELETE", `/sessions/${session.id}`)).status).toBe(404);
  expect(existsSync(directory)).toBe(false);
});

it("a delete whose answer was lost, read back as done, is answered 204 with its workspace removed", async () => {
  const state = { down: false };
  server = await startTestServer({
    wrapStore: (store) => {
      const wrapped = losingAnswers(store, "delete", state);
      // The database answers again for the read-back.
      return { ...wrapped, sessions: { ...wrapped.sessions, access: (id) => store.sessions.access(id) } };
    },
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  expect((await server.request("DELETE", `/sessions/${session.id}`)).status).toBe(204);
  expect(existsSync(join(server.dir, "workspaces", session.id))).toBe(false);
});
