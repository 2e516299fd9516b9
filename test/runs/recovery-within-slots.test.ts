import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AgentTool, type AnyAgentTool, toolOk } from "../../src/agent/tool.js";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import { defaultRunLimits } from "../../src/store/runs.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { type Gate, gate, settle } from "../fakes/gate.js";
import { ScriptedModel, type ScriptedStep, toolCall } from "../fakes/scripted-model.js";
import { seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

/**
 * Over SQLite, start-up recovery resumed every run a previous process left at once, however
 * many MAX_CONCURRENT_RUNS allows (3 live runs and 3 model requests with a limit of 1). Now it
 * resumes as many as there are free slots and holds the others, in claim order, each resumed
 * as a slot frees; a DELETE of a held run ends it `aborted` at once, and a shutdown leaves the
 * held runs for the next start.
 */

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const logger = pino({ level: "silent" });

/** The ids of the `act` calls executed. */
const acted: string[] = [];
/** A tool that asks for approval (it is not read-only). */
const act: AgentTool<Record<string, never>> = {
  name: "act",
  description: "acts",
  inputSchema: z.object({}),
  readOnly: false,
  execute: async (_input, context) => {
    acted.push(context.toolCallId);
    return toolOk("done");
  },
};

/** A process over the file: its model answers "ok" to each request once that request's gate opens (or as `steps` say). */
function processOver(path: string, gates: Gate[], maxConcurrentRuns: number, steps?: ScriptedStep[]) {
  const store = openSqliteStore({ path });
  let closed = false;
  const hub = new EventHub();
  const model = new ScriptedModel(steps ?? gates.map((g) => ({ text: "ok", gate: g.wait })));
  const toolsFor = () => [act as AnyAgentTool];
  const manager = new RunManager({ store, hub, model, toolsFor, maxConcurrentRuns, approvalTimeoutMs: 60_000, logger });
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const g of gates) g.open();
    await manager.shutdown({ graceMs: 500, resume: true }).catch(() => {});
    await store.close();
  };
  cleanups.push(close);
  return { store, model, manager, close };
}

const gates = (n: number) => Array.from({ length: n }, () => gate());

/** Three runs left live by a first process (each held in its first model request); ids in claim order. */
async function threeRunsLeft(): Promise<{ path: string; runIds: string[] }> {
  const dir = tempDir("recovery-slots-");
  cleanups.push(() => dir.cleanup());
  const path = join(dir.path, "agent.db");
  const one = processOver(path, gates(3), 3);
  const runIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const session = await seedSession(one.store, { id: newId("ses") });
    const { run } = await one.manager.start({ session, input: "go", maxTurns: 5, limits: defaultRunLimits() });
    runIds.push(run.id);
  }
  await one.model.requestArrived(2);
  // A shutdown that leaves them `running`, as a crash does.
  await one.manager.shutdown({ graceMs: 500, resume: true });
  await one.close();
  return { path, runIds: runIds.sort() };
}

describe("start-up recovery over SQLite within MAX_CONCURRENT_RUNS", () => {
  it("resumes as many left runs as there are slots, then each held one as a slot frees, in claim order", async () => {
    const { path, runIds } = await threeRunsLeft();
    const held = gates(3);
    const two = processOver(path, held, 1);
    const report = await two.manager.ownership.recoverAtStart();
    await two.model.requestArrived(0);
    for (let i = 0; i < 10; i++) await settle();
    const executing = () => runIds.filter((id) => two.manager.executes(id));
    const atStart = {
      resumed: report.resumed,
      held: report.held,
      liveRuns: two.manager.liveCount,
      modelRequests: two.model.requests.length,
    };
    const stages: { executing: string[]; liveRuns: number }[] = [];
    for (let i = 0; i < 3; i++) {
      await two.model.requestArrived(i);
      // The slot a resumed run was recovered in is given back once it is registered.
      await settle();
      stages.push({ executing: executing(), liveRuns: two.manager.liveCount });
      held[i]?.open();
    }
    const ended = [];
    for (const id of runIds) {
      const run = await until(
        () => two.store.runs.get(id),
        (r) => r?.status === "finished",
        `run ${id} to end`,
      );
      ended.push(run?.stopReason);
    }
    expect({ atStart, stages, ended, modelRequests: two.model.requests.length }).toEqual({
      atStart: { resumed: [runIds[0]], held: [runIds[1], runIds[2]], liveRuns: 1, modelRequests: 1 },
      stages: runIds.map((id) => ({ executing: [id], liveRuns: 1 })),
      ended: ["complete", "complete", "complete"],
      modelRequests: 3,
    });
  });

  it("ends a held run aborted at once when it is cancelled; the other held run still resumes", async () => {
    const { path, runIds } = await threeRunsLeft();
    const held = gates(2);
    const two = processOver(path, held, 1);
    await two.manager.ownership.recoverAtStart();
    await two.model.requestArrived(0);
    const cancelled = runIds[2] as string;
    const answer = await two.manager.cancel(cancelled);
    const stored = await two.store.runs.get(cancelled);
    const atCancel = {
      answer: { status: answer.run.status, accepted: answer.accepted },
      stored: {
        status: stored?.status,
        stopReason: stored?.stopReason,
        byDelete: stored?.stopDetail?.includes("DELETE"),
      },
      modelRequests: two.model.requests.length,
    };
    held[0]?.open();
    await two.model.requestArrived(1);
    const second = runIds.filter((id) => two.manager.executes(id));
    held[1]?.open();
    for (const id of runIds.slice(0, 2)) {
      await until(
        () => two.store.runs.get(id),
        (r) => r?.status === "finished",
        `run ${id} to end`,
      );
    }
    expect({ atCancel, second, modelRequests: two.model.requests.length }).toEqual({
      atCancel: {
        answer: { status: "cancelling", accepted: true },
        stored: { status: "finished", stopReason: "aborted", byDelete: true },
        modelRequests: 1,
      },
      second: [runIds[1]],
      modelRequests: 2,
    });
  });

  it("leaves the held runs `running` for the next start when it shuts down", async () => {
    const { path, runIds } = await threeRunsLeft();
    const two = processOver(path, gates(1), 1);
    await two.manager.ownership.recoverAtStart();
    await two.model.requestArrived(0);
    await two.manager.shutdown({ graceMs: 500, resume: true });
    const afterShutdown = {
      liveRuns: two.manager.liveCount,
      modelRequests: two.model.requests.length,
      stored: await Promise.all(runIds.map(async (id) => (await two.store.runs.get(id))?.status)),
    };
    await two.close();
    const three = processOver(path, gates(3), 3);
    const report = await three.manager.ownership.recoverAtStart();
    expect({ afterShutdown, resumed: report.resumed, held: report.held }).toEqual({
      afterShutdown: { liveRuns: 0, modelRequests: 1, stored: ["running", "running", "running"] },
      resumed: runIds,
      held: [],
    });
  });

  it("stores a decision for a held run, which the run acts on once resumed", async () => {
    acted.length = 0;
    const dir = tempDir("recovery-slots-");
    cleanups.push(() => dir.cleanup());
    const path = join(dir.path, "agent.db");
    // First process: run A held in its model request, run B waiting for approval of its `act` call.
    const stuck = gate();
    const one = processOver(path, [], 2, [{ text: "x", gate: stuck.wait }, { toolCalls: [toolCall("call_1", "act")] }]);
    const [a, b] = [
      await seedSession(one.store, { id: newId("ses") }),
      await seedSession(one.store, { id: newId("ses") }),
    ];
    const runA = (await one.manager.start({ session: a, input: "go", maxTurns: 5 })).run.id;
    await one.model.requestArrived(0);
    const runB = (await one.manager.start({ session: b, input: "go", maxTurns: 5 })).run.id;
    await until(
      async () => (await one.store.runs.get(runB))?.status,
      (status) => status === "awaiting_approval",
      "the approval request",
    );
    await one.close();

    // Second process, one slot: A resumes, B is held; B's call is approved meanwhile.
    const first = gate();
    const two = processOver(path, [], 1, [{ text: "a", gate: first.wait }, { text: "b" }]);
    const report = await two.manager.ownership.recoverAtStart();
    const decided = await two.manager.decide({ runId: runB, toolCallId: "call_1", decision: "approve" });
    const atDecision = { resumed: report.resumed, held: report.held, decision: decided.decision, acted: [...acted] };
    first.open();
    const ended = [];
    for (const id of [runA, runB]) {
      const run = await until(
        () => two.store.runs.get(id),
        (r) => r?.status === "finished",
        `run ${id} to end`,
      );
      ended.push(run?.stopReason);
    }
    expect({ atDecision, ended, acted }).toEqual({
      atDecision: { resumed: [runA], held: [runB], decision: "approve", acted: [] },
      ended: ["complete", "complete"],
      acted: ["call_1"],
    });
  });
});
