/**
 * openapi.yaml: with `ifBusy: steer` and an `Idempotency-Key`, other `input` under the same key
 * is `409 IDEMPOTENCY_KEY_REUSED`, a StartRunConflictError: `details.runId` (the run the key's
 * input went to) and no field the schema does not have.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

it("a steer repeated with its Idempotency-Key but other input is a 409 IDEMPOTENCY_KEY_REUSED the spec documents (details.runId)", async () => {
  const held = gate();
  server.upstream.enqueue(
    { toolCalls: [{ id: "call_ls", name: "list_files", arguments: "{}" }], gate: held.wait },
    { text: "done" },
  );
  const session = await server.request("POST", "/sessions", { body: {} });
  const run = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "start" } });
  const steer = (input: string) =>
    server.request("POST", `/sessions/${session.body.id}/runs`, {
      body: { input, ifBusy: "steer" },
      headers: { "idempotency-key": "steer-key-1" },
    });
  const first = steer("also this");
  await until(
    () => server.ctx.store.inputs.pending(run.body.id),
    (pending) => pending.length === 1,
    "the steered input to be stored",
  );
  const reused = await steer("something else");
  held.open();
  expect((await first).status).toBe(202);
  await finishedRun(server, run.body.id);

  expect(reused.status).toBe(409);
  expect(reused.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
  expect(() =>
    validateResponse({
      method: "POST",
      path: "/sessions/{id}/runs",
      status: reused.status,
      body: reused.body,
      contentType: reused.headers.get("content-type"),
      headers: reused.headers,
    }),
  ).not.toThrow();
  expect(reused.body.error.details.runId).toBe(run.body.id);
});
