/**
 * A run whose final reply (a model answer with no tool calls) is committed, but whose end is
 * not, ends `complete` at the restart without asking the model again (law 2: "the loop stops
 * because the model made no tool call"; a restart resumes a run "from its last commit").
 *
 * A planning run (`planning: true`) commits its final reply alone and its end in a second write
 * (src/runs/finish.ts commitFinalReply). When the process is lost between the two (kill -9, or,
 * as here, the end's write answered "outcome unknown": a PostgreSQL connection lost at COMMIT),
 * the run is left for the restart. The resumed loop used to make another model request whose
 * messages ended with the assistant's own final reply, and commit a second, unrequested answer.
 *
 * Input steered into the run during its final turn is not taken by the resumed run (as live: the
 * run ended before it), and becomes a run of its own.
 */
import { afterEach, describe, expect, it } from "vitest";
import { StorageError } from "../../src/store/errors.js";
import type { Store } from "../../src/store/store.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import type { BackendName } from "../helpers/store-backends.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer | undefined;
let upstream: FakeUpstream | undefined;
let database: TestPgDatabase | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await upstream?.close();
  upstream = undefined;
  await database?.drop();
  database = undefined;
});

/** The store with the first write carrying a run's end answered as lost (nothing of it stored). */
function losingTheEnd(store: Store, state: { lost: boolean }): Store {
  return {
    ...store,
    commitRun: async (runId, changes, events, fence) => {
      if (!state.lost && changes.some((change) => change.kind === "finish")) {
        state.lost = true;
        throw new StorageError("unavailable", "Connection terminated unexpectedly", { outcomeUnknown: true });
      }
      return store.commitRun(runId, changes, events, fence);
    },
  };
}

/** A server over `backend`: the first one makes the database that a restart (`dir`) reuses. */
async function serverOver(
  backend: BackendName,
  options: { upstream: FakeUpstream; dir?: string; wrapStore?: (store: Store) => Store },
): Promise<TestServer> {
  if (backend === "postgres" && !database) database = await createTestPgDatabase();
  return startTestServer({ ...options, ...(database ? { pgUrl: database.url } : {}) });
}

/** The session's history as `role: content` lines. */
async function historyOf(s: TestServer, sessionId: string): Promise<string[]> {
  const items = (await s.request("GET", `/sessions/${sessionId}/messages`)).body.items as {
    role: string;
    content: string;
  }[];
  return items.map((m) => `${m.role}: ${m.content}`);
}

/** The roles of the messages of each model request made so far. */
const askedRoles = (u: FakeUpstream) =>
  u.requests.map((r) => (r.body.messages as { role: string }[]).map((m) => m.role));

describe.each(["sqlite", "postgres"] as const)("a run left after its final reply was committed (%s)", (backend) => {
  it("ends complete at the restart, without another model request", async () => {
    upstream = await startFakeUpstream();
    const state = { lost: false };
    const first = await serverOver(backend, { upstream, wrapStore: (store) => losingTheEnd(store, state) });
    server = first;
    const session = (await first.request("POST", "/sessions", { body: {} })).body;
    upstream.enqueue({ text: "The answer is 42." });
    const run = (
      await first.request("POST", `/sessions/${session.id}/runs`, { body: { input: "question", planning: true } })
    ).body;
    // The reply is committed; the end's write is lost, so the run is left for the restart.
    await until(
      async () => (await historyOf(first, session.id)).length,
      (n) => n === 2,
      "the final reply to be committed",
    );
    await until(
      () => state.lost,
      (lost) => lost,
      "the end's write",
    );
    expect((await first.ctx.store.runs.get(run.id))?.status).not.toBe("finished");
    await first.close({ keepDir: true, resume: true });
    server = undefined;

    // Whatever the model would be asked now is recorded (and answered, so the run can end).
    upstream.fallback = () => ({ text: "A second, unrequested answer." });
    server = await serverOver(backend, { upstream, dir: first.dir });
    const ended = await finishedRun(server, run.id);

    expect({
      stopReason: ended.stopReason,
      modelRequests: askedRoles(upstream),
      history: await historyOf(server, session.id),
    }).toEqual({
      stopReason: "complete",
      modelRequests: [["user"]],
      history: ["user: question", "assistant: The answer is 42."],
    });
  });

  it("input steered during its final turn is not taken by it at the restart, and becomes a run of its own", async () => {
    upstream = await startFakeUpstream();
    const state = { lost: false };
    const first = await serverOver(backend, { upstream, wrapStore: (store) => losingTheEnd(store, state) });
    server = first;
    const session = (await first.request("POST", "/sessions", { body: {} })).body;
    let release!: () => void;
    upstream.enqueue({ text: "The answer is 42.", gate: new Promise<void>((r) => (release = r)) });
    const run = (
      await first.request("POST", `/sessions/${session.id}/runs`, { body: { input: "question", planning: true } })
    ).body;
    await until(
      () => upstream?.requests.length,
      (n) => n === 1,
      "the model request",
    );
    // Past the run's last point to take input: the reply calls no tool.
    const steering = first.request("POST", `/sessions/${session.id}/runs`, {
      body: { input: "also this", ifBusy: "steer" },
    });
    await until(
      () => first.ctx.store.inputs.pending(run.id),
      (p) => p.length === 1,
      "the steered input to be stored",
    );
    release();
    await until(
      () => state.lost,
      (lost) => lost,
      "the end's write",
    );
    await first.close({ keepDir: true, resume: true });
    server = undefined;
    await steering;

    upstream.fallback = () => ({ text: "And this too." });
    server = await serverOver(backend, { upstream, dir: first.dir });
    const ended = await finishedRun(server, run.id);
    const s = server;
    const made = await until(
      async () =>
        ((await s.request("GET", `/sessions/${session.id}/runs`)).body.items as { id: string; input: string }[]).find(
          (r) => r.input === "also this",
        ),
      (r) => r !== undefined,
      "a run made of the steered input",
    );
    const other = made ? await finishedRun(s, made.id) : undefined;

    expect({
      stopReason: ended.stopReason,
      steeredRun: other?.stopReason,
      modelRequests: askedRoles(upstream),
      history: await historyOf(s, session.id),
    }).toEqual({
      stopReason: "complete",
      steeredRun: "complete",
      modelRequests: [["user"], ["user", "assistant", "user"]],
      history: ["user: question", "assistant: The answer is 42.", "user: also this", "assistant: And this too."],
    });
  });
});
