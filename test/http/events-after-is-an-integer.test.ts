/**
 * openapi.yaml, `components.parameters.After` (the `after` query parameter of
 * `GET /runs/{id}/events`): "Resume after this event `seq` (`0`, the default, replays from the
 * first event)", schema `type: integer, minimum: 0, maximum: 2147483647`. The README's API table:
 * "replay after `Last-Event-ID` / `?after=N` (else from 1)".
 *
 * The route read `after` with `z.coerce.number()`, i.e. JavaScript's Number(): `0x2` was read as
 * 2, `1e0` as 1, ` 2` as 2, and an empty `after=` as 0, and the stream is answered as if an
 * integer had been sent. The same spellings of a list's `limit` (also `type: integer`) are refused
 * 400 VALIDATION_FAILED (test/http/page-limit-is-an-integer.test.ts), and a `Last-Event-ID` other
 * than digits is refused 400 INVALID_LAST_EVENT_ID: the resume point the header and the query
 * parameter name was read by two different rules. Now both are decimal digits or 400.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

describe("GET /runs/{id}/events?after=", () => {
  let server: TestServer;
  let runId: string;
  beforeAll(async () => {
    server = await startTestServer();
    const session = (await server.request("POST", "/sessions", { body: {} })).body.id;
    server.upstream.enqueue({ text: "hi" });
    const waited = await server.request("POST", `/sessions/${session}/runs?wait=true`, { body: { input: "hi" } });
    runId = waited.body.run.id;
  });
  afterAll(() => server?.close());

  it("refuses a value that is not written as an integer, 400 VALIDATION_FAILED naming after", async () => {
    const answers: unknown[] = [];
    for (const after of ["0x2", "1e0", " 2", ""]) {
      const res = await server.request("GET", `/runs/${runId}/events?after=${encodeURIComponent(after)}`);
      if (res.status === 400)
        validateResponse({ method: "GET", path: "/runs/{id}/events", status: 400, body: res.body });
      answers.push({ after, status: res.status, code: res.body?.error?.code ?? null });
    }
    expect(answers).toEqual([
      { after: "0x2", status: 400, code: "VALIDATION_FAILED" },
      { after: "1e0", status: 400, code: "VALIDATION_FAILED" },
      { after: " 2", status: 400, code: "VALIDATION_FAILED" },
      { after: "", status: 400, code: "VALIDATION_FAILED" },
    ]);
  });
});
