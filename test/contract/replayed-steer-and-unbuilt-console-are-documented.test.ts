/**
 * Answers openapi.yaml documents as they are sent:
 * - a steer repeated with its `Idempotency-Key` is `202` with `Idempotent-Replayed: true`, a
 *   header the spec lists on that `202` (as on the `201` of a replayed start);
 * - `GET /` of a server whose console is not built is `503 CONSOLE_NOT_BUILT`, one of the 503s
 *   the spec documents for the route.
 */
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consolePage } from "../../src/http/console.js";
import { errorHandler } from "../../src/http/error-handler.js";
import { gate } from "../fakes/gate.js";
import { operation, validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

describe("a replayed steer", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("is 202 with Idempotent-Replayed: true, a header the spec documents on that 202", async () => {
    const held = gate();
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_ls", name: "list_files", arguments: "{}" }], gate: held.wait },
      { text: "done" },
    );
    const session = await server.request("POST", "/sessions", { body: {} });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "start" } });
    const steer = () =>
      server.request("POST", `/sessions/${session.body.id}/runs`, {
        body: { input: "also this", ifBusy: "steer" },
        headers: { "idempotency-key": "steer-replay-1" },
      });
    const first = steer();
    await until(
      () => server.ctx.store.inputs.pending(run.body.id),
      (pending) => pending.length === 1,
      "the steered input to be stored",
    );
    held.open();
    expect((await first).status).toBe(202);
    const replayed = await steer();
    await finishedRun(server, run.body.id);

    expect(replayed.status).toBe(202);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    const documented = operation("POST", "/sessions/{id}/runs")?.responses["202"]?.headers ?? {};
    expect(Object.keys(documented)).toContain("Idempotent-Replayed");
    expect(documented["Idempotent-Replayed"]?.schema).toEqual({ type: "string", enum: ["true"] });
  });
});

describe("GET / without a built console", () => {
  it("is 503 CONSOLE_NOT_BUILT, an answer the spec documents for the route", async () => {
    // The route's own page function and the app's error handler, with no console files.
    const app = Fastify();
    app.setErrorHandler(errorHandler);
    app.get("/", async (_request, reply) => {
      const { body, headers } = consolePage(null);
      return reply.headers(headers).send(body);
    });
    try {
      const res = await app.inject({ method: "GET", url: "/" });
      const body = res.json();
      expect(res.statusCode).toBe(503);
      expect(body.error.code).toBe("CONSOLE_NOT_BUILT");
      expect(() =>
        validateResponse({
          method: "GET",
          path: "/",
          status: res.statusCode,
          body,
          contentType: String(res.headers["content-type"]),
          headers: res.headers as Record<string, string>,
        }),
      ).not.toThrow();
    } finally {
      await app.close();
    }
  });
});
