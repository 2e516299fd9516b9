/**
 * agent_tool_duration_seconds counts "tool executions (calls whose tool ran; a denied or
 * invalid call has no duration)" (README, Observability). A run cancelled (DELETE /runs/{id})
 * while its call's `tool.started` was being written never runs the tool: the loop closes the
 * call ABORTED, takes it out of the run's stats.toolCalls ("nor is it counted as a tool the run
 * executed", tool-phase.ts) and its result says durationMs 0. The metrics still count it as a
 * tool execution: the digest takes any call whose `tool.started` it saw as executed, so
 * agent_tool_duration_seconds{tool="list_files",outcome="ABORTED"} gets a 0 s observation for a
 * tool that never ran (and the run's stats say 0 tool calls). Expected: no duration observed for
 * it (it is counted in agent_tool_calls_total as ABORTED only).
 */
import { afterEach, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { door } from "../fakes/gate.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a call whose tool never ran (cancelled while its start was written) is not a tool execution", async () => {
  const startWrite = door();
  let held = false;
  // Holds the write of the call's tool.started until the test has cancelled the run.
  const wrapStore = (store: Store): Store => ({
    ...store,
    commitRun: async (runId, changes, events, fence) => {
      if (!held && events.some((e) => e.type === "tool.started")) {
        held = true;
        await startWrite.pass();
      }
      return store.commitRun(runId, changes, events, fence);
    },
  });
  server = await startTestServer({ wrapStore });
  const s = server;
  s.upstream.enqueue({ toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }] });
  const session = await s.request("POST", "/sessions", { body: {} });
  const run = await s.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "list" } });
  expect(run.status).toBe(201);
  await startWrite.arrived;
  // The cancel a DELETE /runs/{id} makes: it fires the run's signal at once, then writes
  // `cancelling` behind the held write.
  const cancelling = s.ctx.manager.cancel(run.body.id);
  startWrite.release();
  expect((await cancelling).accepted).toBe(true);
  const finished = await finishedRun(s, run.body.id);
  expect(finished.stopReason).toBe("aborted");
  // The run itself says its tool did not run.
  expect(finished.stats.toolCalls).toBe(0);
  const result = (await s.request("GET", `/sessions/${session.body.id}/messages`)).body.items.find(
    (m: { role: string }) => m.role === "tool",
  );
  expect(result.metadata.errorCode).toBe("ABORTED");
  expect(result.metadata.durationMs).toBe(0);

  const m = new Exposition((await s.ctx.metrics.exposition()).text);
  expect(m.value("agent_tool_calls_total", { tool: "list_files", outcome: "ABORTED" })).toBe(1);
  // No execution: the tool never ran.
  expect(m.histogram("agent_tool_duration_seconds", { tool: "list_files", outcome: "ABORTED" }).count).toBe(0);
});
