/**
 * The stop conditions across a restart, with a real SQLite file: a run suspended by a shutdown
 * (ON_RESTART=resume) and resumed by the next process keeps counting toward the same budgets and
 * the same repeat count, and its plan (derived from its messages) survives, live and in the replay.
 */
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ModelUsage } from "../../src/agent/model.js";
import { type AgentTool, toolError } from "../../src/agent/tool.js";
import type { RunEvent } from "../../src/domain/run-events.js";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import { defaultRunLimits, type RunLimits } from "../../src/store/runs.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { ScriptedModel, type ScriptedStep, toolCall } from "../fakes/scripted-model.js";
import { seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const readFile: AgentTool<{ path: string }> = {
  name: "read_file",
  description: "read",
  inputSchema: z.object({ path: z.string() }),
  readOnly: true,
  execute: async ({ path }) => toolError("NOT_FOUND", `no such file: ${path}`, true),
};

const logger = pino({ level: "silent" });

/** One server process over the data directory: its store and run manager, playing `steps`. */
function processOver(path: string, steps: ScriptedStep[]) {
  const store = openSqliteStore({ path });
  let closed = false;
  const close = async () => {
    if (!closed) await store.close();
    closed = true;
  };
  cleanups.push(close);
  const hub = new EventHub();
  const model = new ScriptedModel(steps);
  const manager = new RunManager({
    store,
    hub,
    model,
    toolsFor: () => [readFile],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger,
  });
  return { store, hub, model, manager, close };
}

const usage = (tokens: number): ModelUsage => ({ inputTokens: tokens - 10, outputTokens: 10 });
const readMissing = (id: string, tokens = 0): ScriptedStep => ({
  toolCalls: [toolCall(id, "read_file", { path: "missing.md" })],
  usage: usage(tokens || 10),
});

/**
 * Runs the first process until the model is asked for turn `heldTurn` (held open), then shuts it
 * down with resume (the run is left unfinished) and starts a second process that resumes it.
 */
async function restartDuring(
  first: ScriptedStep[],
  heldTurn: number,
  limits: Partial<RunLimits>,
  after: ScriptedStep[],
) {
  const dir = tempDir("stop-conditions-");
  cleanups.push(() => dir.cleanup());
  const path = join(dir.path, "agent.db");
  const held = gate();
  const one = processOver(path, [...first, { text: "never sent", gate: held.wait }]);
  const session = await seedSession(one.store, { id: newId("ses") });
  const { run } = await one.manager.start({
    session,
    input: "go",
    maxTurns: 10,
    limits: { ...defaultRunLimits(), ...limits },
  });
  await one.model.requestArrived(heldTurn - 1);
  await one.manager.shutdown({ graceMs: 1_000, resume: true });
  expect((await one.store.runs.get(run.id))?.status).not.toBe("finished");
  const planBefore = (await one.manager.get(run.id))?.plan ?? null;
  await one.close();

  const two = processOver(path, after);
  await two.manager.ownership.recoverAtStart();
  const finished = await two.manager.waitForFinish(run.id);
  return { finished, planBefore, store: two.store, model: two.model, runId: run.id };
}

const replay = async (store: Store, runId: string): Promise<RunEvent[]> =>
  (await store.events.after(runId, 0)).map((e) => JSON.parse(e.data) as RunEvent);

describe("stop conditions across a restart", () => {
  it("resuming after a restart keeps the same repeat count: two failures before, one after, stop loop_detected", async () => {
    const { finished, model } = await restartDuring([readMissing("c1"), readMissing("c2")], 3, { loopRepeatLimit: 3 }, [
      readMissing("c3"),
    ]);
    expect(finished).toMatchObject({ stopReason: "loop_detected", status: "finished" });
    expect(finished.stopDetail).toMatch(
      /^stopped after turn 3: read_file \{"path":"missing.md"\} failed with NOT_FOUND 3 times/,
    );
    expect(model.requests).toHaveLength(1);
  });

  it("resuming after a restart keeps counting toward the same token budget", async () => {
    const { finished, model } = await restartDuring(
      [readMissing("c1", 100)],
      2,
      { maxTokens: 250, loopRepeatLimit: 0 },
      [readMissing("c2", 100), readMissing("c3", 100)],
    );
    expect(finished.stopReason).toBe("budget_exhausted");
    expect(finished.stopDetail).toBe(
      "stopped before turn 4: this run used 300 of its 250 tokens; raise maxTokens or start a new run",
    );
    expect(finished.stats).toMatchObject({ inputTokens: 270, outputTokens: 30 });
    expect(model.requests).toHaveLength(2);
  });

  it("the plan survives a restart and a replay", async () => {
    const create = toolCall("p1", "create_plan", { steps: [{ title: "look" }, { title: "report" }] });
    const { finished, planBefore, store, runId } = await restartDuring(
      [{ toolCalls: [create] }],
      2,
      { planning: true },
      [{ toolCalls: [toolCall("p2", "update_plan_step", { step: 1, status: "completed" })] }, { text: "done" }],
    );
    expect(planBefore).toEqual({
      steps: [
        { title: "look", status: "pending" },
        { title: "report", status: "pending" },
      ],
    });
    expect(finished).toMatchObject({ stopReason: "complete", stopDetail: null, planning: true });
    const plan = {
      steps: [
        { title: "look", status: "completed" },
        { title: "report", status: "pending" },
      ],
    };
    expect(finished.plan).toEqual(plan);
    const events = await replay(store, runId);
    const updates = events.flatMap((e) => (e.type === "plan.updated" ? [e.plan] : []));
    expect(updates).toEqual([planBefore, plan]);
    const last = events.at(-1);
    expect(last?.type === "run.finished" && last.run.plan).toEqual(plan);
  });
});
