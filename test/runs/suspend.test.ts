import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AgentTool, toolOk } from "../../src/agent/tool.js";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { gate } from "../fakes/gate.js";
import { ScriptedModel } from "../fakes/scripted-model.js";
import { seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

type Execute = AgentTool<Record<string, never>>["execute"];
const tool = (name: string, execute: Execute): AgentTool<Record<string, never>> => ({
  name,
  description: name,
  inputSchema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
  readOnly: false,
  execute,
});

/** A run whose first call (`first`) is executing when it resolves; `second` is the next call. */
async function runAtFirstTool(first: Execute) {
  const dir = tempDir("suspend-");
  const store = openSqliteStore({ path: join(dir.path, "agent.db") });
  cleanups.push(async () => {
    await store.close();
    dir.cleanup();
  });
  const executing = gate();
  const secondRuns: string[] = [];
  const model = new ScriptedModel([
    {
      toolCalls: [
        { id: "c1", name: "first", input: "{}" },
        { id: "c2", name: "second", input: "{}" },
      ],
    },
  ]);
  const manager = new RunManager({
    store,
    hub: new EventHub(),
    model,
    toolsFor: () => [
      tool("first", async (input, context) => {
        executing.open();
        return first(input, context);
      }),
      tool("second", async (_input, { toolCallId }) => {
        secondRuns.push(toolCallId);
        return toolOk("second ran");
      }),
    ],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger: pino({ level: "silent" }),
  });
  const session = await seedSession(store, { id: newId("ses"), approval: { default: "allow" } });
  const { run } = await manager.start({ session, input: "go", maxTurns: 4 });
  await executing.wait;
  const results = async () =>
    (await store.messages.ofRun(session.id, run.id)).flatMap((m) =>
      m.role === "tool" ? [[m.toolCallId, m.isError ? m.metadata.errorCode : "ok"]] : [],
    );
  return { store, manager, run, secondRuns, results };
}

describe("a run suspended by a shutdown (ON_RESTART=resume)", () => {
  it("a running tool finishes and its result is written; the run stops before the next call", async () => {
    const done = gate();
    const { store, manager, run, secondRuns, results } = await runAtFirstTool(async () => {
      await done.wait;
      return toolOk("first ran");
    });
    const stopping = manager.shutdown({ graceMs: 5_000, resume: true });
    done.open();
    await stopping;
    expect(await results()).toEqual([["c1", "ok"]]);
    expect(secondRuns).toEqual([]);
    expect((await store.toolCalls.get(run.id, "c2"))?.state).toBe("proposed");
    expect((await store.runs.get(run.id))?.status).not.toBe("finished");
  });

  it("law 8 holds: a tool that throws while the run is suspended still closes the later calls and ends the run error", async () => {
    const done = gate();
    const { store, manager, run, secondRuns, results } = await runAtFirstTool(async () => {
      await done.wait;
      throw new Error("boom");
    });
    const stopping = manager.shutdown({ graceMs: 5_000, resume: true });
    done.open();
    await stopping;
    expect(await results()).toEqual([
      ["c1", "TOOL_EXECUTION_FAILED"],
      ["c2", "NOT_EXECUTED"],
    ]);
    expect(secondRuns).toEqual([]);
    expect(await store.runs.get(run.id)).toMatchObject({ status: "finished", stopReason: "error" });
  });

  it("a tool that outlasts the grace period is signalled to stop and left for the restart", async () => {
    let aborted = false;
    const { store, manager, run, results } = await runAtFirstTool(
      (_input, { signal }) =>
        new Promise((resolve) =>
          signal.addEventListener("abort", () => {
            aborted = true;
            resolve(toolOk("stopped"));
          }),
        ),
    );
    await manager.shutdown({ graceMs: 50, resume: true });
    expect(aborted).toBe(true);
    // Nothing more was written: the restart records the started call as interrupted.
    expect(await results()).toEqual([]);
    expect((await store.toolCalls.get(run.id, "c1"))?.state).toBe("started");
    expect((await store.runs.get(run.id))?.status).not.toBe("finished");
  });
});
