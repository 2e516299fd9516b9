import type { TestServer } from "./test-server.js";
import { until } from "./until.js";

/** Starts a run in a new session and resolves once it awaits approval of its `write_file` call `call_w`. */
export async function runAwaitingApproval(server: TestServer): Promise<{ sessionId: string; runId: string }> {
  server.upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
  });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "write" } })).body;
  await until(
    async () => (await server.request("GET", `/runs/${run.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  return { sessionId: session.id, runId: run.id };
}
