/**
 * A list's `limit` is an integer (openapi.yaml: `type: integer`, 1 to 200), written as decimal
 * digits. `limit=1e2` and `limit=0x10` were read as numbers (100, 16) and answered; now every
 * list refuses a limit that is not written as an integer, 400 VALIDATION_FAILED naming it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

describe("a list's limit", () => {
  let server: TestServer;
  let lists: { path: string; template: string }[];
  beforeAll(async () => {
    server = await startTestServer();
    const session = (await server.request("POST", "/sessions", { body: {} })).body.id;
    server.upstream.enqueue({ text: "hi" });
    const run = (await server.request("POST", `/sessions/${session}/runs?wait=true`, { body: { input: "hi" } })).body
      .run.id;
    lists = [
      { path: "/sessions", template: "/sessions" },
      { path: `/sessions/${session}/runs`, template: "/sessions/{id}/runs" },
      { path: `/sessions/${session}/messages`, template: "/sessions/{id}/messages" },
      { path: `/runs/${run}/steps`, template: "/runs/{id}/steps" },
      { path: `/runs/${run}/approvals`, template: "/runs/{id}/approvals" },
      { path: `/runs/${run}/webhooks`, template: "/runs/{id}/webhooks" },
    ];
  });
  afterAll(() => server?.close());

  it("is refused, 400 VALIDATION_FAILED, unless written as an integer's digits", async () => {
    for (const { path, template } of lists) {
      for (const limit of ["1e2", "0x10", "0b10", "16.0", "1.5", "+16", " 16", "16 ", "1_6", "Infinity", ""]) {
        const res = await server.request("GET", `${path}?limit=${encodeURIComponent(limit)}`);
        expect([path, limit, res.status, res.body.error?.code]).toEqual([path, limit, 400, "VALIDATION_FAILED"]);
        expect(res.body.error.details[0]).toMatchObject({ in: "querystring", path: "limit" });
        validateResponse({ method: "GET", path: template, status: res.status, body: res.body });
      }
    }
  });

  it("is taken when written as digits, 1 to 200, and defaults to 50", async () => {
    for (const { path, template } of lists) {
      for (const limit of ["1", "16", "200", "007"]) {
        const res = await server.request("GET", `${path}?limit=${limit}`);
        expect([path, limit, res.status]).toEqual([path, limit, 200]);
        validateResponse({ method: "GET", path: template, status: res.status, body: res.body });
      }
      for (const limit of ["0", "201", "1000"]) {
        expect([path, limit, (await server.request("GET", `${path}?limit=${limit}`)).status]).toEqual([
          path,
          limit,
          400,
        ]);
      }
      expect((await server.request("GET", path)).status).toBe(200);
    }
  });
});
