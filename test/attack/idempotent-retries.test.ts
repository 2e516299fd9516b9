/**
 * Attacker: none needed, just a network. A client starts a run with `ifBusy` and an
 * `Idempotency-Key`, and retries the POST (its first answer was lost: a timeout, a proxy's 502),
 * or sends the retry while the first is still in flight. The key promises one effect: the retry
 * returns the same run instead of starting a second. Before, an `interrupt` retry first
 * interrupted the session's active run — the very run the first request started — and then,
 * finding the key, returned that run, now `aborted`: the retry killed the work. A `steer` copy
 * must not steer the same input into the run its first copy started.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

describe("ifBusy interrupt and steer with an Idempotency-Key, retried", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
    // Every run asks to run a shell command, and waits for its approval.
    server.upstream.fallback = () => ({
      toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi" }) }],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const waitStatus = async (runId: string, status: string) => {
    for (let i = 0; i < 100; i++) {
      const run = (await server.request("GET", `/runs/${runId}`)).body;
      if (run.status === status) return run;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`run ${runId} never reached ${status}`);
  };

  it("a retry returns the run it started, still alive, and interrupts nothing", async () => {
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const first = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "A" } })).body;
    await waitStatus(first.id, "awaiting_approval");

    const request = () =>
      server.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: "B", ifBusy: "interrupt" },
        headers: { "idempotency-key": "retry-me-1" },
      });
    const started = await request();
    expect(started.status).toBe(201);
    await waitStatus(started.body.id, "awaiting_approval");

    const retried = await request();
    expect(retried.body.id).toBe(started.body.id);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    const run = (await server.request("GET", `/runs/${started.body.id}`)).body;
    expect(run.status).toBe("awaiting_approval");
    expect(run.stopReason).toBeNull();
  });

  it("two copies of the request at once (a retry while the first still waits for the interrupted run) get one run, alive", async () => {
    for (let round = 0; round < 5; round++) {
      const session = (await server.request("POST", "/sessions", { body: {} })).body;
      const first = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "A" } })).body;
      await waitStatus(first.id, "awaiting_approval");
      const request = () =>
        server.request("POST", `/sessions/${session.id}/runs`, {
          body: { input: "B", ifBusy: "interrupt" },
          headers: { "idempotency-key": `concurrent-${round}` },
        });
      const answers = await Promise.all([request(), request()]);
      expect(answers.map((a) => [a.status, a.body.error?.code ?? null])).toEqual([
        [201, null],
        [201, null],
      ]);
      const [a, b] = answers.map((answer) => answer.body.id);
      expect(a).toBe(b);
      const run = await waitStatus(a, "awaiting_approval");
      expect(run.stopReason).toBeNull();
    }
  });

  it("two copies of a plain start at once on an idle session get one run", async () => {
    for (let round = 0; round < 5; round++) {
      const session = (await server.request("POST", "/sessions", { body: {} })).body;
      const request = () =>
        server.request("POST", `/sessions/${session.id}/runs`, {
          body: { input: "C" },
          headers: { "idempotency-key": `plain-${round}` },
        });
      const answers = await Promise.all([request(), request()]);
      expect(answers.map((a) => [a.status, a.body.error?.code ?? null])).toEqual([
        [201, null],
        [201, null],
      ]);
      expect(answers[0]?.body.id).toBe(answers[1]?.body.id);
    }
  });

  it("two copies of a steer at once on an idle session get one run, one answered as its replay", async () => {
    for (let round = 0; round < 8; round++) {
      const session = (await server.request("POST", "/sessions", { body: {} })).body;
      const request = () =>
        server.request("POST", `/sessions/${session.id}/runs`, {
          body: { input: `do it ${round}`, ifBusy: "steer" },
          headers: { "idempotency-key": `steer-once-${round}` },
        });
      const [a, b] = await Promise.all([request(), request()]);
      // One copy started the run (201); the other is answered that run as a replay (201 with
      // Idempotent-Replayed), never as a steer of the same input into it (202).
      expect([a.status, b.status], `round ${round}`).toEqual([201, 201]);
      expect(b.body.id).toBe(a.body.id);
      const replayed = [a, b].filter((r) => r.headers.get("idempotent-replayed") === "true");
      expect(replayed.length, `round ${round}`).toBe(1);
      const cancel = await server.request("DELETE", `/runs/${a.body.id}`);
      expect([200, 202]).toContain(cancel.status);
    }
  });
});
