/** Probe: can a decision be posted for a call of the reply that has not asked yet (pre-approval), or for one of another run? */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

describe("approval for a call not yet asked", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
    server.upstream.fallback = (body) =>
      body.messages.some((m: { role: string }) => m.role === "tool")
        ? { text: "ok" }
        : {
            toolCalls: [
              { id: "first", name: "shell", arguments: JSON.stringify({ command: "echo 1" }) },
              { id: "second", name: "shell", arguments: JSON.stringify({ command: "echo 2" }) },
            ],
          };
  });
  afterAll(async () => {
    await server?.close();
  });

  it("is refused, and the call is asked when its turn comes", async () => {
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body;
    // Waited for with a deadline (10 s), not 50 tries: on a loaded machine the tries could end
    // first, and the decision on `first` below then found no request to answer.
    await until(
      async () => (await server.request("GET", `/runs/${run.id}`)).body.status,
      (status) => status === "awaiting_approval",
      "the run to wait for approval",
    );
    const early = await server.request("POST", `/runs/${run.id}/approvals/second`, { body: { decision: "approve" } });
    console.log("pre-approval:", early.status, JSON.stringify(early.body));
    expect(early.status).toBe(404);
    await server.request("POST", `/runs/${run.id}/approvals/first`, { body: { decision: "deny" } });
    await until(
      async () => (await server.request("GET", `/runs/${run.id}/approvals`)).body.items,
      (pending) => pending.some((p: { toolCallId: string }) => p.toolCallId === "second"),
      "second to be asked",
    );
  });
});
