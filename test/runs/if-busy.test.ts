import { describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { toolResultCodes, validHistory } from "../helpers/history.js";
import { sharedTestServer } from "../helpers/shared-server.js";
import { openSse } from "../helpers/sse-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;

/** A promise and the function that resolves it. */
const finished = (runId: string) => finishedRun(server, runId);

/** A session whose first run is held in its model request until `release`. */
async function busySession() {
  const held = gate();
  server.upstream.enqueue({ text: "first answer", gate: held.wait });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const first = await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "first" } });
  expect(first.status).toBe(201);
  await until(
    async () => server.upstream.requests.length,
    (n) => n === 1,
    "the first model request",
  );
  return { sessionId: session.id as string, first: first.body, release: held.open };
}

const start = (sessionId: string, body: Record<string, unknown>) =>
  server.request("POST", `/sessions/${sessionId}/runs`, { body });

/** The last user message of each model request, in order. */
const askedInputs = () =>
  server.upstream.requests.map(
    (r) => r.body.messages.filter((m: { role: string }) => m.role === "user").at(-1)?.content as string,
  );

describe.each(["sqlite", "postgres"] as const)("ifBusy on %s", (backend) => {
  // One server for the backend's tests, each in a session of its own.
  sharedTestServer(
    () => startTestServer({ backend }),
    (shared) => {
      server = shared;
    },
  );

  it("reject (the default, and said explicitly) answers 409 SESSION_BUSY naming the active run", async () => {
    const { sessionId, first, release } = await busySession();
    for (const body of [{ input: "again" }, { input: "again", ifBusy: "reject" }]) {
      const res = await start(sessionId, body);
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: "SESSION_BUSY", details: { runId: first.id } });
    }
    release();
    expect((await finished(first.id)).stopReason).toBe("complete");
  });

  it("two enqueues at once are both stored queued (201), listed, and started in order once the run ahead ends", async () => {
    const { sessionId, first, release } = await busySession();
    server.upstream.enqueue({ text: "second answer" }, { text: "third answer" });
    const second = await start(sessionId, { input: "second", ifBusy: "enqueue" });
    const third = await start(sessionId, { input: "third", ifBusy: "enqueue" });
    const [a, b] = await Promise.all([
      start(sessionId, { input: "fourth", ifBusy: "enqueue" }),
      start(sessionId, { input: "fifth", ifBusy: "enqueue" }),
    ]);
    for (const res of [second, third, a, b]) {
      expect(res.status).toBe(201);
      expect(res.body.status).toBe("queued");
    }
    server.upstream.enqueue({ text: "4" }, { text: "5" });
    const listed = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items;
    expect(listed.map((r: { status: string }) => r.status).sort()).toEqual([
      "queued",
      "queued",
      "queued",
      "queued",
      "running",
    ]);
    expect((await server.request("GET", `/sessions/${sessionId}`)).body.activeRunId).toBe(first.id);
    const watcher = await openSse(`${server.url}/runs/${second.body.id}/events`);
    release();
    const events = await watcher.ended;
    expect(events.map((e) => e.event).slice(0, 2)).toEqual(["run.queued", "run.started"]);
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    for (const res of [second, third, a, b]) expect((await finished(res.body.id)).stopReason).toBe("complete");
    // Oldest first: the concurrent pair in the order the store took them.
    const concurrent = [a.body, b.body].sort(
      (x, y) => x.createdAt.localeCompare(y.createdAt) || x.id.localeCompare(y.id),
    );
    expect(askedInputs()).toEqual(["first", "second", "third", ...concurrent.map((r) => r.input)]);
    const runs = await Promise.all(
      [first, second.body, third.body, ...concurrent].map(
        async (r) => (await server.request("GET", `/runs/${r.id}`)).body,
      ),
    );
    for (let i = 1; i < runs.length; i++) expect(runs[i].finishedAt >= runs[i - 1].finishedAt).toBe(true);
  });

  it("?wait=true with enqueue answers once the queued run has run and ended, with its final text", async () => {
    const { sessionId, first, release } = await busySession();
    server.upstream.enqueue({ text: "second answer" });
    const waiting = server.request("POST", `/sessions/${sessionId}/runs?wait=true`, {
      body: { input: "second", ifBusy: "enqueue" },
    });
    // The queued run is stored before the run ahead ends; the answer waits past that.
    await until(
      async () => (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items.length,
      (n) => n === 2,
      "the queued run",
    );
    release();
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.run).toMatchObject({ status: "finished", stopReason: "complete" });
    expect(res.body.run.id).not.toBe(first.id);
    expect(res.body.text).toBe("second answer");
  });

  it("enqueue on an idle session starts the run at once", async () => {
    server.upstream.enqueue({ text: "at once" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const res = await start(session.id, { input: "go", ifBusy: "enqueue" });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe("running");
    expect((await finished(res.body.id)).stopReason).toBe("complete");
    const events = (await (await openSse(`${server.url}/runs/${res.body.id}/events`)).ended).map((e) => e.event);
    expect(events).toContain("run.started");
    expect(events).not.toContain("run.queued");
  });

  it("DELETE on a queued run ends it aborted without running, with its run.finished; the queue goes on", async () => {
    const { sessionId, first, release } = await busySession();
    const doomed = await start(sessionId, { input: "never", ifBusy: "enqueue" });
    const kept = await start(sessionId, { input: "kept", ifBusy: "enqueue" });
    const cancelled = await server.request("DELETE", `/runs/${doomed.body.id}`);
    expect(cancelled.status).toBe(202);
    expect(cancelled.body).toMatchObject({ id: doomed.body.id, status: "finished", stopReason: "aborted" });
    expect(cancelled.body.stopDetail).toMatch(/cancelled by a DELETE/);
    const events = await (await openSse(`${server.url}/runs/${doomed.body.id}/events`)).ended;
    expect(events.map((e) => e.event)).toEqual(["run.queued", "run.finished"]);
    expect((await server.request("DELETE", `/runs/${doomed.body.id}`)).status).toBe(200);
    server.upstream.enqueue({ text: "kept answer" });
    release();
    expect((await finished(kept.body.id)).stopReason).toBe("complete");
    expect((await finished(first.id)).stopReason).toBe("complete");
    expect(askedInputs()).toEqual(["first", "kept"]);
    const history = await validHistory(server, sessionId);
    expect(history.map((m) => (m as { content?: string }).content)).not.toContain("never");
  });

  it("interrupt during a pending approval: the old run ends aborted with its calls closed, then the new run starts", async () => {
    server.upstream.enqueue({
      toolCalls: [
        { id: "call_1", name: "shell", arguments: '{"command":"echo x > ran.txt"}' },
        { id: "call_2", name: "list_files", arguments: "{}" },
      ],
    });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const old = (await start(session.id, { input: "old" })).body;
    const watcher = await openSse(`${server.url}/runs/${old.id}/events`);
    await watcher.waitFor((e) => e.event === "approval.requested");
    server.upstream.enqueue({ text: "new answer" });
    const res = await start(session.id, { input: "new", ifBusy: "interrupt" });
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe(old.id);
    const oldEnd = (await watcher.ended).at(-1)?.json.run;
    expect(oldEnd).toMatchObject({ status: "finished", stopReason: "aborted" });
    expect(oldEnd.stopDetail).toMatch(/interrupt/);
    expect((await finished(res.body.id)).stopReason).toBe("complete");
    expect(toolResultCodes(await validHistory(server, session.id))).toEqual(["ABORTED", "ABORTED"]);
    expect(askedInputs()).toEqual(["old", "new"]);
  });

  it("DELETE of a session with queued runs starts none of them when its active run is aborted", async () => {
    const { sessionId, first } = await busySession();
    const queued = await start(sessionId, { input: "never", ifBusy: "enqueue" });
    expect(queued.body.status).toBe("queued");
    expect((await server.request("DELETE", `/sessions/${sessionId}`)).status).toBe(204);
    expect((await server.request("GET", `/runs/${first.id}`)).status).toBe(404);
    expect((await server.request("GET", `/runs/${queued.body.id}`)).status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(askedInputs()).toEqual(["first"]);
    expect(server.ctx.manager.liveCount).toBe(0);
  });

  it("two interrupts at once: the active run ends aborted once, the last new run ends complete, and none overlaps another", async () => {
    const { sessionId, first } = await busySession();
    server.upstream.fallback = () => ({ text: "winner" });
    const answers = await Promise.all([
      start(sessionId, { input: "a", ifBusy: "interrupt" }),
      start(sessionId, { input: "b", ifBusy: "interrupt" }),
    ]);
    // Either the second came while the first waited (409, the session taken), or after the
    // first's run had started (it interrupts that run in turn).
    const created = answers.filter((r) => r.status === 201).map((r) => r.body);
    for (const res of answers.filter((r) => r.status !== 201)) {
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("SESSION_BUSY");
    }
    expect(await finished(first.id)).toMatchObject({ stopReason: "aborted" });
    // In start order: the last ends complete; an earlier one was interrupted by the next
    // (aborted), unless it had already completed when the next one started.
    const ends = (await Promise.all(created.map((run) => finished(run.id)))).sort((x, y) => x.id.localeCompare(y.id));
    expect(ends.at(-1)?.stopReason).toBe("complete");
    for (const [i, run] of ends.slice(0, -1).entries()) {
      const next = ends[i + 1] as (typeof ends)[number];
      if (run.stopReason === "complete") expect(run.finishedAt <= next.createdAt).toBe(true);
      else expect(run.stopReason).toBe("aborted");
    }
    const runs = (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items;
    expect(runs.map((r: { id: string }) => r.id).sort()).toEqual([first.id, ...created.map((r) => r.id)].sort());
    await validHistory(server, sessionId);
  });

  it("interrupt on an idle session starts the run", async () => {
    server.upstream.enqueue({ text: "fine" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body;
    const res = await start(session.id, { input: "go", ifBusy: "interrupt" });
    expect(res.status).toBe(201);
    expect((await finished(res.body.id)).stopReason).toBe("complete");
  });
});
