import type { TestServer } from "./test-server.js";
import { until } from "./until.js";

/** `server` with every request made with the bearer `key` (for helpers that take a server). */
export function withKey(server: TestServer, key: string): TestServer {
  const auth = { authorization: `Bearer ${key}` };
  return {
    ...server,
    request: (method, path, options = {}) =>
      server.request(method, path, { ...options, headers: { ...auth, ...options.headers } }),
  };
}

/**
 * Starts a run in a new session (`session`: its body) and resolves once it awaits approval of
 * its `write_file` call `call_w` (`content`: what the call writes; `input`: the run's input; `run`:
 * more fields of the run's body, such as its budgets).
 */
export async function runAwaitingApproval(
  server: TestServer,
  {
    session = {},
    input = "write",
    content = "hi",
    run: fields = {},
  }: { session?: object; input?: string; content?: string; run?: object } = {},
): Promise<{ sessionId: string; runId: string }> {
  server.upstream.enqueue({
    toolCalls: [{ id: "call_w", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content }) }],
  });
  const created = (await server.request("POST", "/sessions", { body: session })).body;
  const run = (await server.request("POST", `/sessions/${created.id}/runs`, { body: { ...fields, input } })).body;
  await until(
    async () => (await server.request("GET", `/runs/${run.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the approval request",
  );
  return { sessionId: created.id, runId: run.id };
}
