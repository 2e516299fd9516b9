import { afterEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { door } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const forTest: TestServer[] = [];
afterEach(async () => {
  for (const s of forTest.splice(0)) await s.close();
});

function holdingDelete(store: Store, pass: () => Promise<void>): Store {
  return {
    ...store,
    sessions: {
      ...store.sessions,
      delete: async (id) => {
        await pass();
        return store.sessions.delete(id);
      },
    },
  };
}

/**
 * A session whose DELETE this instance has taken is gone to its callers (404 by id, for its
 * messages and runs) while its rows are deleted, but GET /sessions still listed it, with its
 * active run: a client that listed and then opened it got 404. Now the list leaves it out.
 */
describe.each(["sqlite", "postgres"] as const)("a session whose DELETE is taken, on %s", (backend) => {
  it("is gone from GET /sessions as it is from GET /sessions/{id}", async () => {
    const held = door();
    const server = await startTestServer({ backend, wrapStore: (store) => holdingDelete(store, held.pass) });
    forTest.push(server);
    const kept = (await server.request("POST", "/sessions", { body: {} })).body;
    const doomed = (await server.request("POST", "/sessions", { body: {} })).body;
    const deleting = server.request("DELETE", `/sessions/${doomed.id}`);
    await held.arrived;
    await until(
      async () => (await server.request("GET", `/sessions/${doomed.id}`)).status,
      (s) => s === 404,
      "the delete to be taken",
    );
    const listed = await server.request("GET", "/sessions");
    held.release();
    expect((await deleting).status).toBe(204);
    // The instance treats it as gone to its callers: not found by id, nor listed.
    expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([kept.id]);
  });

  it("a page it would have filled holds the next session: a page holds an item when there is one after its cursor", async () => {
    const held = door();
    const server = await startTestServer({ backend, wrapStore: (store) => holdingDelete(store, held.pass) });
    forTest.push(server);
    const kept = (await server.request("POST", "/sessions", { body: {} })).body;
    const doomed = (await server.request("POST", "/sessions", { body: {} })).body;
    const deleting = server.request("DELETE", `/sessions/${doomed.id}`);
    await held.arrived;
    await until(
      async () => (await server.request("GET", `/sessions/${doomed.id}`)).status,
      (s) => s === 404,
      "the delete to be taken",
    );
    // Newest first: the session being deleted is the first of the list.
    const page = await server.request("GET", "/sessions?limit=1");
    held.release();
    expect((await deleting).status).toBe(204);
    expect(page.status).toBe(200);
    expect(page.body.items.map((s: { id: string }) => s.id)).toEqual([kept.id]);
    expect(page.body.nextCursor).toBeNull();
  });
});
