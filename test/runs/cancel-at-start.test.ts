/**
 * A DELETE /runs/{id} that lands between a plain start's insert (the run is stored `running`,
 * the session's activeRunId) and its registration here: answered 202 `cancelling`, it found no
 * live run to stop, and the run went on to ask the model and run its tools. Registration now
 * stops it first. The window is widened by a slow history read (a long session, a slow disk).
 */
import { afterEach, expect, it } from "vitest";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a DELETE during a start's admission cancels the run before it asks the model", async () => {
  let slow = false;
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "messages", (name, _args, call) => {
        if (name === "history" && slow) {
          slow = false;
          return new Promise((r) => setTimeout(r, 400)).then(call);
        }
        return call();
      }),
  });
  const s = server;
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
  slow = true;
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
