/**
 * A run followed by the client and cancelled by something else than the user's Ctrl-C (here a
 * new run started in its session by another client with `ifBusy: "interrupt"`) ends `aborted`
 * with the server's stop detail naming who stopped it and what to try (openapi.yaml, Run.stopDetail:
 * "For every stop but complete: one sentence naming the step, the cause and what to try"). The
 * client's last line is "how the run ended, in words a person can act on": it must say why.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startCli } from "../helpers/cli-process.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

describe("agent-server run: a run cancelled from elsewhere", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("says the server's reason (a new run interrupted it), not only that it was cancelled", async () => {
    const hold = gate();
    server.upstream.enqueue({ text: ["thinking"], gate: hold.wait }, { text: "the other answer" });
    const cli = startCli({ args: ["run", "a long question"], env: { AGENT_URL: server.url } });
    try {
      await cli.waitFor(/thinking/, "stdout");
      const sessionId = /^session (ses_\w+)$/m.exec(cli.stderr())?.[1] as string;
      const other = await server.request("POST", `/sessions/${sessionId}/runs`, {
        body: { input: "something else", ifBusy: "interrupt" },
      });
      expect(other.status).toBe(201);
      const result = await cli.done;
      expect(result.code).toBe(130);
      const runs = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items;
      const interrupted = runs.find((r: { id: string }) => r.id !== other.body.id);
      expect(interrupted.stopDetail).toContain('ifBusy "interrupt"');
      const last = result.stderr.trimEnd().split("\n").at(-1) ?? "";
      expect(last).toMatch(/^\[run\] aborted/);
      // The user did not press Ctrl-C: the line says who cancelled it, as the server does.
      expect(last).toContain(interrupted.stopDetail);
    } finally {
      hold.open();
      cli.child.kill();
    }
  });
});
