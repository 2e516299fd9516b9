/**
 * openapi.yaml documents `Last-Event-ID` with the pattern `^\s*[0-9]{1,15}\s*$` ("Anything but a
 * non-negative integer is `400 INVALID_LAST_EVENT_ID`"), and a resume point at or past the last
 * event of a finished run is answered `204` (an EventSource stops reconnecting on it). Every
 * value of the pattern is a resume point, also past the largest seq a run can have (2^31-1, an
 * INTEGER column on PostgreSQL), on both stores; a value the pattern does not allow is refused.
 */
import { afterEach, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(["sqlite", "postgres"] as const)("on %s", (backend) => {
  it("a Last-Event-ID within the documented pattern, past the end of a finished run, is answered 204", async () => {
    server = await startTestServer({ backend });
    server.upstream.enqueue({ text: "done" });
    const session = await server.request("POST", "/sessions", { body: {} });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      body: { input: "hi" },
    });
    expect(run.body.run.status).toBe("finished");
    for (const lastEventId of ["2147483647", "2147483648", "999999999999999", " 000000000000042 "]) {
      const res = await fetch(`${server.url}/runs/${run.body.run.id}/events`, {
        headers: { "last-event-id": lastEventId },
      });
      const text = await res.text();
      expect({ lastEventId, status: res.status, body: text.slice(0, 160) }).toEqual({
        lastEventId,
        status: 204,
        body: "",
      });
    }
  });

  it("a live run's stream resumed past any event it can send opens, sends no event, and ends with the run", async () => {
    server = await startTestServer({ backend });
    const held = gate();
    server.upstream.enqueue({ text: "slow answer", gate: held.wait });
    const session = await server.request("POST", "/sessions", { body: {} });
    const run = await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "hi" } });
    const res = await fetch(`${server.url}/runs/${run.body.id}/events`, {
      headers: { "last-event-id": "999999999999999" },
    });
    expect(res.status).toBe(200);
    held.open();
    expect(await res.text()).not.toMatch(/^(id|event|data):/m);
  });
});

it("a Last-Event-ID the documented pattern does not allow is refused 400 INVALID_LAST_EVENT_ID", async () => {
  server = await startTestServer();
  server.upstream.enqueue({ text: "done" });
  const session = await server.request("POST", "/sessions", { body: {} });
  const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "hi" } });
  for (const lastEventId of ["1000000000000000", "-1", "1.5", "1e3", "x"]) {
    const res = await server.request("GET", `/runs/${run.body.run.id}/events`, {
      headers: { "last-event-id": lastEventId },
    });
    expect({ lastEventId, status: res.status, code: res.body?.error?.code }).toEqual({
      lastEventId,
      status: 400,
      code: "INVALID_LAST_EVENT_ID",
    });
  }
});
