/**
 * `DELETE /runs/{id}` of a `queued` run ends it at once, which is a write. While the database
 * refuses writes the answer is `503 STORAGE_UNAVAILABLE` with `Retry-After`, which the spec
 * documents for the route (StorageUnavailable, beside TOO_MANY_CONNECTIONS).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { FaultyStore } from "../fakes/faulty-store.js";
import { gate } from "../fakes/gate.js";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer;
let faulty: FaultyStore;
beforeAll(async () => {
  server = await startTestServer({
    wrapStore: (store) => {
      faulty = new FaultyStore(store);
      return faulty.store;
    },
  });
});
afterAll(async () => {
  await server.close();
});

it("DELETE /runs/{id} of a queued run while the database refuses writes answers a status and body the spec documents for the route", async () => {
  const held = gate();
  server.upstream.enqueue({ text: "first", gate: held.wait }, { text: "second" });
  const session = await server.request("POST", "/sessions", { body: {} });
  const active = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "one" } });
  const queued = await server.request("POST", `/sessions/${session.body.id}/runs`, {
    body: { input: "two", ifBusy: "enqueue" },
  });
  expect(queued.body.status).toBe("queued");

  faulty.failWrites("readonly");
  let res: Response;
  try {
    res = await fetch(`${server.url}/runs/${queued.body.id}`, { method: "DELETE" });
  } finally {
    faulty.heal();
    held.open();
  }
  const body = await res.json();
  await finishedRun(server, active.body.id);
  await finishedRun(server, queued.body.id);

  expect(res.status).toBe(503);
  expect(() =>
    validateResponse({
      method: "DELETE",
      path: "/runs/{id}",
      status: res.status,
      body,
      contentType: res.headers.get("content-type"),
      headers: res.headers,
    }),
  ).not.toThrow();
});
