/**
 * openapi.yaml (ifBusy steer): when the run ends before taking the input, it starts a new run
 * ("the other fields apply only then"). A run made of input whose steer request is gone (a
 * restart) takes the steer's own fields, stored with its input; input stored without them
 * (before migration 0023) takes the ended run's, every tool call asking for approval.
 */
import { afterEach, expect, it } from "vitest";
import { runOfLeftInput } from "../../src/runs/queue.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
let upstream: FakeUpstream | undefined;
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close().catch(() => {});
  await upstream?.close();
  upstream = undefined;
});

/** The run made of input `inputId` left on a run of session `sessionId`, as stored, once there is one. */
const madeOf = async (server: TestServer, sessionId: string, inputId: string) => {
  const made = await until(
    () => runOfLeftInput(server.ctx.store, { sessionId, inputId, input: "" }),
    (run) => run !== null,
    "the left input queued as a run",
  );
  return server.ctx.store.runs.get(made?.id ?? "?");
};

it("input steered before a restart and left by its resumed run makes a run with the steer's own fields", async () => {
  upstream = await startFakeUpstream();
  const first = await startTestServer({ upstream });
  servers.push(first);
  const { sessionId, runId } = await runAwaitingApproval(first, {
    run: { maxTurns: 7, approval: { tools: { shell: "allow" } } },
  });
  const steering = first.request("POST", `/sessions/${sessionId}/runs`, {
    body: { input: "also this", ifBusy: "steer", maxTurns: 3, approval: { tools: { shell: "ask" } } },
  });
  const [input] = await until(
    () => first.ctx.store.inputs.pending(runId),
    (p) => p.length === 1,
    "the steered input to be stored",
  );
  await first.close({ keepDir: true, resume: true });
  servers.splice(servers.indexOf(first), 1);
  expect((await steering).status).toBe(202);

  const second = await startTestServer({ dir: first.dir, upstream });
  servers.push(second);
  upstream.fallback = () => ({ text: "done" });
  await until(
    async () => (await second.request("GET", `/runs/${runId}`)).body.status,
    (s) => s === "awaiting_approval",
    "the resumed run to await its approval again",
  );
  await second.request("DELETE", `/runs/${runId}`);
  const made = await madeOf(second, sessionId, input?.id ?? "?");
  expect({ maxTurns: made?.maxTurns, approval: made?.approval }).toEqual({
    maxTurns: 3,
    approval: { tools: { shell: "ask" } },
  });
}, 40_000);

it("input stored without its steer's fields makes a run where every tool call asks for approval", async () => {
  const server = await startTestServer();
  servers.push(server);
  server.upstream.fallback = () => ({ text: "done" });
  const { sessionId, runId } = await runAwaitingApproval(server, {
    session: { approval: { tools: { read_file: "allow" } } },
    run: { maxTurns: 7, approval: { tools: { shell: "allow" } } },
  });
  // As a steer stored it before its fields were stored with it.
  const inputId = `msg_${"y".repeat(26)}`;
  const createdAt = new Date().toISOString();
  expect(await server.ctx.store.inputs.add({ id: inputId, runId, content: "older", createdAt })).toBe(true);
  await server.request("DELETE", `/runs/${runId}`);
  const made = await madeOf(server, sessionId, inputId);
  expect({ maxTurns: made?.maxTurns, approval: made?.approval }).toEqual({
    maxTurns: 7,
    approval: { default: "ask", tools: { shell: "ask", read_file: "ask" } },
  });
  expect((await finishedRun(server, made?.id ?? "?")).stopReason).toBe("complete");
});
