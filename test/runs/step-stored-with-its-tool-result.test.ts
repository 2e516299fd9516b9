/**
 * A turn's step listing a tool result is stored in that result's own write (one transaction):
 * the result and the step listing it are never apart in the store. And it costs no step write
 * more: a run of one tool call stores three steps (turn 1 model-only with its assistant message,
 * turn 1 with its result, turn 2 with the final reply), the last report of turn 1 not repeated.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { StepTrace } from "../../src/agent/step-trace.js";
import type { RunChange, Store } from "../../src/store/store.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** The step changes of a batch, as `<turn>:<tool call ids>`. */
const stepsOf = (changes: readonly RunChange[]): string[] =>
  changes
    .filter((c): c is { kind: "step"; step: StepTrace } => c.kind === "step")
    .map(({ step }) => `${step.turn}:${step.tools.map((t) => t.toolCallId).join(",")}`);

describe.each(["sqlite", "postgres"] as const)("a run's step writes, on %s", (backend) => {
  it("a tool result's write carries its turn's step listing it; a one-call run writes three steps", async () => {
    const batches: (readonly RunChange[])[] = [];
    const server = await startTestServer({
      backend,
      wrapStore: (store): Store => ({
        ...store,
        commitRun: async (runId, changes, events, fence) => {
          const stored = await store.commitRun(runId, changes, events, fence);
          batches.push(changes);
          return stored;
        },
      }),
    });
    servers.push(server);
    server.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "list_files", arguments: "{}" }] }, { text: "done" });
    const session = (await server.request("POST", "/sessions", { body: {} })).body.id;
    const done = await server.request("POST", `/sessions/${session}/runs?wait=true`, { body: { input: "go" } });
    expect(done.body.run.stopReason).toBe("complete");

    const withResult = batches.filter((changes) =>
      changes.some((c) => c.kind === "message" && c.message.role === "tool" && c.message.toolCallId === "call_1"),
    );
    expect(withResult).toHaveLength(1);
    expect(stepsOf(withResult[0] ?? [])).toEqual(["1:call_1"]);
    expect(batches.flatMap(stepsOf)).toEqual(["1:", "1:call_1", "2:"]);

    const steps = (await server.request("GET", `/runs/${done.body.run.id}/steps`)).body.items as StepTrace[];
    expect(steps.map((s) => [s.turn, s.tools.map((t) => [t.toolCallId, t.status])])).toEqual([
      [1, [["call_1", "ok"]]],
      [2, []],
    ]);
  });
});
