/**
 * A run's start gap: the run is stored (`running`, the session's activeRunId) and not yet
 * registered here while its start reads the session's history, widened here by a slow read (a
 * long session, a slow disk). A DELETE then was answered 202 `cancelling` but found no live run
 * to stop, and the run asked the model and ran its tools anyway; a `?wait=true` replay then
 * answered at once with the run still running.
 */
import { afterEach, expect, it } from "vitest";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
/** The next history read takes 400 ms. */
let slowNext = false;
afterEach(async () => {
  await server?.close();
  server = undefined;
  slowNext = false;
});

async function slowHistoryServer(): Promise<TestServer> {
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "messages", (name, _args, call) => {
        if (name === "history" && slowNext) {
          slowNext = false;
          return new Promise((r) => setTimeout(r, 400)).then(call);
        }
        return call();
      }),
  });
  return server;
}

it("a DELETE during a start's admission cancels the run before it asks the model", async () => {
  const s = await slowHistoryServer();
  s.upstream.enqueue(
    {
      toolCalls: [
        { id: "call_w", name: "write_file", arguments: '{"path":"w.txt","content":"written after the cancel"}' },
      ],
    },
    { text: "done" },
  );
  const session = (await s.request("POST", "/sessions", { body: { approval: { tools: { write_file: "allow" } } } }))
    .body;
  slowNext = true;
  const started = s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "hi" } });
  const runId = await until(
    async () => (await s.request("GET", `/sessions/${session.id}`)).body.activeRunId as string | null,
    (id) => !!id,
    "the run to be active",
  );
  const del = await s.request("DELETE", `/runs/${runId}`);
  expect(del.status).toBe(202);
  expect(del.body.status).toBe("cancelling");
  expect((await started).status).toBe(201);
  const run = await finishedRun(s, runId as string);
  expect(run.stopReason).toBe("aborted");
  const messages = (await s.request("GET", `/sessions/${session.id}/messages`)).body.items;
  // The cancelled run must neither ask the model nor execute a tool.
  expect(
    messages.filter((m: { role: string }) => m.role === "tool").map((m: { content: string }) => m.content),
  ).toEqual([]);
  expect(s.upstream.requests.length).toBe(0);
});

it("?wait=true on an idempotent retry answers once the run has finished", async () => {
  const s = await slowHistoryServer();
  s.upstream.enqueue({ text: "hello" });
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  slowNext = true;
  const headers = { "idempotency-key": "k1" };
  const first = s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "hi" }, headers });
  await until(
    async () => (await s.request("GET", `/sessions/${session.id}`)).body.activeRunId as string | null,
    (id) => !!id,
    "the run to be active",
  );
  const retry = await s.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" }, headers });
  await first;
  expect(retry.status).toBe(200);
  expect(retry.body.run.status).toBe("finished");
  expect(retry.body.text).toBe("hello");
});
