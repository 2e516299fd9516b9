/**
 * Attacker: none needed, just a network. Two copies of one `ifBusy: "steer"` request with an
 * `Idempotency-Key` reach an idle session at once (a client's retry while its first attempt is
 * still in flight). The key promises one effect: the first copy starts a run with the input;
 * the second must answer that run, not steer the same input into it a second time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

describe("ifBusy steer with an Idempotency-Key, two copies at once on an idle session", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
    // Every run asks to run a shell command, and waits for its approval: it stays active.
    server.upstream.fallback = () => ({
      toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi" }) }],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("both copies get the one run, and its input is in it once", async () => {
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
