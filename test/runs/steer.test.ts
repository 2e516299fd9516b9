import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { validHistory } from "../helpers/history.js";
import { sharedTestServer } from "../helpers/shared-server.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;

const finished = (runId: string) => finishedRun(server, runId);

/**
 * A run whose shell call runs until the test writes `go` into the workspace (so a steer
 * arrives while it executes), then answers "steered answer"; watched from its start.
 */
async function runInTool() {
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
  return { session, run, watcher };
}

const steer = (sessionId: string, input: string) =>
  server.request("POST", `/sessions/${sessionId}/runs`, { body: { input, ifBusy: "steer" } });

describe.each(["sqlite", "postgres"] as const)("ifBusy steer on %s", (backend) => {
  // One server for the backend's tests, each in a session of its own.
  sharedTestServer(
    () => startTestServer({ backend }),
    (shared) => {
      server = shared;
    },
  );

  it("steer during a running tool: the user message lands after the tool's result, before the next model request (202)", async () => {
    const { session, run, watcher } = await runInTool();
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
  it("a steer repeated with its Idempotency-Key steers once: every retry is answered with the run that took it (202, Idempotent-Replayed)", async () => {
    const { session, run, watcher } = await runInTool();
    const keyed = (input: string) =>
      server.request("POST", `/sessions/${session.id}/runs`, {
        body: { input, ifBusy: "steer" },
        headers: { "idempotency-key": "steer-once" },
      });
    // A client that timed out and sent the request again while the first still waits.
    const first = keyed("also say hello");
    await until(
      () => server.ctx.store.inputs.pending(run.id),
      (p) => p.length === 1,
      "the input to be stored",
    );
    const retryWhileStored = keyed("also say hello");
    const reused = await keyed("something else");
    expect(reused.status).toBe(409);
    expect(reused.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(reused.body.error.details).toEqual({ runId: run.id, differs: ["input"] });
    expect(await server.ctx.store.inputs.pending(run.id)).toHaveLength(1);
    writeFileSync(join(server.dir, "workspaces", session.id, "go"), "");
    const [a, b] = await Promise.all([first, retryWhileStored]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect([a.body.id, b.body.id]).toEqual([run.id, run.id]);
    expect(a.headers.get("idempotent-replayed")).toBeNull();
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    await watcher.ended;
    // After the run took it (and ended), a retry finds the message it became.
    const late = await keyed("also say hello");
    expect(late.status).toBe(202);
    expect(late.body.id).toBe(run.id);
    expect(late.headers.get("idempotent-replayed")).toBe("true");
    const users = (await validHistory(server, session.id)).filter((m) => m.role === "user") as unknown as {
      content: string;
    }[];
    expect(users.map((m) => m.content)).toEqual(["start", "also say hello"]);
    expect((await server.request("GET", `/sessions/${session.id}/runs`)).body.items).toHaveLength(1);
    expect(server.upstream.requests).toHaveLength(2);
  });

  it("a keyed steer that started a run on an idle session is answered with that run when repeated", async () => {
    server.upstream.enqueue({ text: "hi" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const keyed = () =>
      server.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: "hello", ifBusy: "steer" },
        headers: { "idempotency-key": "steer-idle" },
      });
    const made = await keyed();
    expect(made.status).toBe(201);
    await finished(made.body.id);
    const again = await keyed();
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(made.body.id);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(server.upstream.requests).toHaveLength(1);
  });
});
