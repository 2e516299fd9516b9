import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { validHistory } from "../helpers/history.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server.close();
});

const finished = (runId: string) => finishedRun(server, runId);

const steer = (sessionId: string, input: string) =>
  server.request("POST", `/sessions/${sessionId}/runs`, { body: { input, ifBusy: "steer" } });

describe.each(["sqlite", "postgres"] as const)("ifBusy steer on %s", (backend) => {
  beforeEach(async () => {
    server = await startTestServer({ backend });
  });

  it("steer during a running tool: the user message lands after the tool's result, before the next model request (202)", async () => {
    // The tool runs until the test lets it finish, so the steer arrives while it executes.
    server.upstream.enqueue(
      {
        toolCalls: [
          {
            id: "call_wait",
            name: "shell",
            arguments: '{"command":"while [ ! -f go ]; do sleep 0.02; done; echo waited"}',
          },
        ],
      },
      { text: "steered answer" },
    );
    const session = (await server.request("POST", "/sessions", { body: { approval: { tools: { shell: "allow" } } } }))
      .body;
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "start" } })).body;
    const watcher = await openSse(`${server.url}/runs/${run.id}/events`);
    await watcher.waitFor((e) => e.event === "tool.started");
    const steered = steer(session.id, "also say hello");
    await until(
      () => server.ctx.store.inputs.pending(run.id),
      (p) => p.length === 1,
      "the input to be stored",
    );
    writeFileSync(join(server.dir, "workspaces", session.id, "go"), "");
    const res = await steered;
    expect(res.status).toBe(202);
    expect(res.body.id).toBe(run.id);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
    const events = await watcher.ended;
    expect(events.at(-1)?.json.run.stopReason).toBe("complete");
    const messages = events.filter((e) => e.event === "message").map((e) => e.json.message);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "assistant"]);
    expect(messages[3]).toMatchObject({ role: "user", content: "also say hello", runId: run.id });
    // The model's second request carries it, after the tool result; the first did not.
    expect(server.upstream.requests).toHaveLength(2);
    const sent = server.upstream.requests[1]?.body.messages.slice(-3);
    expect(sent.map((m: { role: string }) => m.role)).toEqual(["assistant", "tool", "user"]);
    expect(sent[1]).toMatchObject({ tool_call_id: "call_wait" });
    expect(sent[2].content).toBe("also say hello");
    expect(JSON.stringify(server.upstream.requests[0]?.body.messages)).not.toContain("also say hello");
    expect((await validHistory(server, session.id)).map((m) => m.role)).toEqual(messages.map((m) => m.role));
    expect(await server.ctx.store.inputs.pending(run.id)).toEqual([]);
  });

  it("steer when the active run ends first: the input starts a new run instead (201 with the new run)", async () => {
    let release!: () => void;
    server.upstream.enqueue(
      { text: "the last word", gate: new Promise<void>((r) => (release = r)) },
      { text: "answer to the steer" },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "start" } })).body;
    await until(
      () => server.upstream.requests.length,
      (n) => n === 1,
      "the model request",
    );
    // The run is past its last point to take input: the model's reply calls no tool.
    const steered = steer(session.id, "one more thing");
    await until(
      () => server.ctx.store.inputs.pending(run.id),
      (p) => p.length === 1,
      "the input to be stored",
    );
    release();
    const res = await steered;
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe(run.id);
    expect(res.body.input).toBe("one more thing");
    expect((await finished(run.id)).stopReason).toBe("complete");
    expect((await finished(res.body.id)).stopReason).toBe("complete");
    const history = await validHistory(server, session.id);
    const users = history.filter((m) => m.role === "user") as unknown as { content: string; runId: string }[];
    expect(users.map((m) => [m.content, m.runId])).toEqual([
      ["start", run.id],
      ["one more thing", res.body.id],
    ]);
    expect(await server.ctx.store.inputs.pending(run.id)).toEqual([]);
  });

  it("steer on an idle session starts a run (201)", async () => {
    server.upstream.enqueue({ text: "hi" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const res = await steer(session.id, "hello");
    expect(res.status).toBe(201);
    expect((await finished(res.body.id)).stopReason).toBe("complete");
  });
});
