/**
 * Statuses the server answers on a route are documented for that route in openapi.yaml (a
 * client generated from the spec has a type for each):
 * - `POST /runs/{id}/stream-token` takes a body like any POST: a non-JSON one is 415, one over
 *   BODY_LIMIT_BYTES 413.
 * - `DELETE /runs/{id}` and `DELETE /sessions/{id}` likewise answer 415 and 413 to a body.
 * - `GET /metrics` with METRICS_PORT set answers 404 on the API port.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/child-server.js";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

async function answer(server: TestServer, method: string, path: string, template: string, init: RequestInit = {}) {
  const res = await fetch(`${server.url}${path}`, { method, ...init });
  const text = await res.text();
  const body = text === "" ? null : JSON.parse(text);
  let problem: string | null = null;
  try {
    validateResponse({
      method,
      path: template,
      status: res.status,
      body,
      contentType: text === "" ? null : res.headers.get("content-type"),
      headers: res.headers,
    });
  } catch (err) {
    problem = (err as Error).message.split("\n")[0] ?? "invalid";
  }
  return { status: res.status, code: body?.error?.code, problem };
}

describe("with a small body limit", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { BODY_LIMIT_BYTES: "2048" } });
  });
  afterAll(async () => {
    await server.close();
  });

  it("POST /runs/{id}/stream-token: the 415 and 413 it answers are documented", async () => {
    const session = await server.request("POST", "/sessions", { body: {} });
    server.upstream.enqueue({ text: "done" });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "hi" } });
    const path = `/runs/${run.body.run.id}/stream-token`;
    const xml = await answer(server, "POST", path, "/runs/{id}/stream-token", {
      headers: { "content-type": "application/xml" },
      body: "<token/>",
    });
    expect(xml).toEqual({ status: 415, code: "UNSUPPORTED_MEDIA_TYPE", problem: null });
    const large = await answer(server, "POST", path, "/runs/{id}/stream-token", {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ pad: "x".repeat(4096) }),
    });
    expect(large).toEqual({ status: 413, code: "BODY_TOO_LARGE", problem: null });
  });

  it("DELETE /runs/{id} and DELETE /sessions/{id}: the 415 and 413 they answer are documented", async () => {
    const session = await server.request("POST", "/sessions", { body: {} });
    for (const [path, template] of [
      ["/runs/run_unknown", "/runs/{id}"],
      [`/sessions/${session.body.id}`, "/sessions/{id}"],
    ] as const) {
      const res = await answer(server, "DELETE", path, template, {
        headers: { "content-type": "text/xml" },
        body: "<why/>",
      });
      expect({ template, ...res }).toEqual({ template, status: 415, code: "UNSUPPORTED_MEDIA_TYPE", problem: null });
      const large = await answer(server, "DELETE", path, template, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ pad: "x".repeat(4096) }),
      });
      expect({ template, ...large }).toEqual({ template, status: 413, code: "BODY_TOO_LARGE", problem: null });
    }
  });
});

describe("with METRICS_PORT", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { METRICS_PORT: String(await freePort()) } });
  });
  afterAll(async () => {
    await server.close();
  });

  it("GET /metrics on the API port: the 404 it answers is documented", async () => {
    const res = await answer(server, "GET", "/metrics", "/metrics");
    expect(res).toEqual({ status: 404, code: "NOT_FOUND", problem: null });
  });
});
