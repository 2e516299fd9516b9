/**
 * A page left showing an approval request posts its answer after that run has ended (cancelled
 * elsewhere) while a newer run of the session is active. openapi.yaml: 409 `RUN_FINISHED`, "the
 * approvals answered belong to a run that has ended". The route decided the call on the
 * session's active run instead, which has no such call: 404 NOT_FOUND "approval", as if the page
 * had invented the call. The answered message names its run (its id is the run's): now a run
 * that is not the active one is 409 RUN_FINISHED.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

it("an answer to an approval of a run that has ended, another run active, is 409 RUN_FINISHED", async () => {
  const hold = gate();
  try {
    const { sessionId, runId } = await runAwaitingApproval(server);
    await server.request("DELETE", `/runs/${runId}`);
    await server.ctx.manager.waitForFinish(runId);
    server.upstream.enqueue({ text: ["still ", "going"], gate: hold.wait });
    const second = await server.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "next" } });
    expect(second.status).toBe(201);

    const res = await server.request("POST", `/sessions/${sessionId}/chat`, {
      body: {
        messages: [
          { id: "u1", role: "user", parts: [{ type: "text", text: "write" }] },
          {
            id: runId,
            role: "assistant",
            parts: [
              {
                type: "dynamic-tool",
                toolName: "write_file",
                toolCallId: "call_w",
                state: "approval-responded",
                input: { path: "a.txt", content: "hi" },
                approval: { id: "call_w", approved: true },
              },
            ],
          },
        ],
      },
    });
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 409, code: "RUN_FINISHED" });
  } finally {
    hold.open();
  }
});
