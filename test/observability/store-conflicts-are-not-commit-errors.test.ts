/**
 * agent_store_commit_duration_seconds{outcome="error"} is what an operator alerts on as the
 * database failing run writes. A client starting a run in a session that already has one (an
 * ordinary 409 SESSION_BUSY, the database working as it should) is no failed write of the
 * database: such a refusal is counted as outcome="conflict".
 */
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it.each(["sqlite", "postgres"] as const)(
  "a run refused as SESSION_BUSY is not counted as a failed database write (%s)",
  async (backend) => {
    server = await startTestServer({ backend });
    const s = server;
    const first = gate();
    s.upstream.enqueue({ text: "first", gate: first.wait });
    const session = (await s.request("POST", "/sessions", { body: {} })).body;
    const running = await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "one" } });
    expect(running.status).toBe(201);
    for (let i = 0; i < 5; i++) {
      const busy = await s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "again" } });
      expect(busy.status).toBe(409);
      expect(busy.body.error.code).toBe("SESSION_BUSY");
    }
    first.open();
    expect((await finishedRun(s, running.body.id)).stopReason).toBe("complete");

    const m = new Exposition(await (await fetch(`${s.url}/metrics`)).text());
    expect(m.histogram("agent_store_commit_duration_seconds", { operation: "create_run", outcome: "ok" }).count).toBe(
      1,
    );
    expect(
      m.histogram("agent_store_commit_duration_seconds", { operation: "create_run", outcome: "error" }).count,
    ).toBe(0);
    expect(
      m.histogram("agent_store_commit_duration_seconds", { operation: "create_run", outcome: "conflict" }).count,
    ).toBe(5);
  },
);
