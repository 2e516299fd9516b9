import { afterEach, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer } from "../helpers/test-server.js";

/**
 * README (Busy sessions): `ifBusy: "interrupt"` answers 201: "the active run is cancelled exactly
 * as `DELETE /runs/{id}` does ... and once its end is stored the new run starts"; 409
 * `SESSION_BUSY` is the answer of `reject` (and of an interrupt limited to one run, `interrupts`).
 * Behind a load balancer two clients (or a client's two tabs) interrupting the same busy session
 * at once reach two instances: each cancels the active run, both insert, and the one-active rule
 * refuses the later insert: that interrupting start is answered 409 SESSION_BUSY (the run it
 * should have interrupted is the other start's new run, which it never tries to interrupt).
 * Two interrupts one after the other both get 201 (the second interrupts the first's run).
 * Now the start refused so interrupts the other start's run in turn (last interrupt wins): both
 * are answered 201, and once both are, one of their runs has ended `aborted` and the other goes on.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it("two interrupting starts of one busy session, posted at once to A and B, are both started (201), never SESSION_BUSY", async () => {
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const database = await createTestPgDatabase();
  cleanups.push(() => database.drop());
  const a = await startTestServer({ upstream, pgUrl: database.url, env: { INSTANCE_ID: "inst-a" } });
  cleanups.push(() => a.close());
  const b = await startTestServer({ upstream, pgUrl: database.url, env: { INSTANCE_ID: "inst-b" } });
  cleanups.push(() => b.close());
  // Every run streams a little and then waits: the session stays busy.
  upstream.fallback = () => ({ text: "working", gate: new Promise(() => {}) });

  const answers: [number, number][] = [];
  const outcomes: string[][] = [];
  for (let i = 0; i < 3; i++) {
    const session = (await a.request("POST", "/sessions", { body: {} })).body.id as string;
    const first = await a.request("POST", `/sessions/${session}/runs`, { body: { input: "first" } });
    expect(first.status).toBe(201);
    const [onA, onB] = await Promise.all([
      a.request("POST", `/sessions/${session}/runs`, { body: { input: "instead, from a", ifBusy: "interrupt" } }),
      b.request("POST", `/sessions/${session}/runs`, { body: { input: "instead, from b", ifBusy: "interrupt" } }),
    ]);
    answers.push([onA.status, onB.status]);
    const runs = await Promise.all(
      [onA, onB].map(async (answer) => (await a.request("GET", `/runs/${answer.body.id}`)).body),
    );
    outcomes.push(runs.map((run) => `${run.status}${run.stopReason ? ` ${run.stopReason}` : ""}`).sort());
  }
  expect(answers).toEqual([
    [201, 201],
    [201, 201],
    [201, 201],
  ]);
  expect(outcomes).toEqual(Array.from({ length: 3 }, () => ["finished aborted", "running"]));
}, 60_000);
