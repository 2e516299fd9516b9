import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AgentTool, toolOk } from "../../src/agent/tool.js";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import type { Store } from "../../src/store/store.js";
import type { ToolCallState } from "../../src/store/tool-calls.js";
import { ScriptedModel } from "../fakes/scripted-model.js";
import { faultySqlite } from "../helpers/faulty-sqlite.js";
import { seedSession } from "../helpers/seed.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A tool that records, when it executes, what the ledger says about its own call. */
function probeTool(
  name: string,
  readOnly: boolean,
  seen: Map<string, ToolCallState | undefined>,
  ledger: () => { store: Store; runId: string },
) {
  const tool: AgentTool<Record<string, never>> = {
    name,
    description: `probe (${readOnly ? "read-only" : "has effects"})`,
    inputSchema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
    readOnly,
    execute: async (_input, { toolCallId }) => {
      const { store, runId } = ledger();
      seen.set(toolCallId, (await store.toolCalls.get(runId, toolCallId))?.state);
      return toolOk("ok");
    },
  };
  return tool;
}

async function setup() {
  // Each commitRun is one write (one transaction): its seqs went together.
  const { faulty, store } = faultySqlite("tool-start-", cleanups);
  const batches = () => faulty.commits.map((commit) => commit.events.map((e) => e.seq));
  const seen = new Map<string, ToolCallState | undefined>();
  const current = { store, runId: "" };
  const model = new ScriptedModel([
    {
      toolCalls: [
        { id: "call_read", name: "peek", input: "{}" },
        { id: "call_write", name: "poke", input: "{}" },
      ],
    },
    { text: "done" },
  ]);
  const manager = new RunManager({
    store,
    hub: new EventHub(),
    model,
    toolsFor: () => [probeTool("peek", true, seen, () => current), probeTool("poke", false, seen, () => current)],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger: pino({ level: "silent" }),
  });
  const session = await seedSession(store, { id: newId("ses"), approval: { default: "allow" } });
  return { store, faulty, seen, model, manager, session, current, batches };
}

describe("tool start durability", () => {
  it("every tool, read-only or not, is recorded as started in a write of its own before it runs", async () => {
    const { store, seen, model, manager, session, current, batches } = await setup();
    const { run } = await manager.start({ session, input: "go", maxTurns: 4 });
    current.runId = run.id;
    const finished = await manager.waitForFinish(run.id);
    expect(finished.stopReason).toBe("complete");
    model.assertComplete();

    // What each tool saw in the ledger while it ran: its own start, already stored.
    expect(seen.get("call_read")).toBe("started");
    expect(seen.get("call_write")).toBe("started");

    // Afterwards both calls are finished, each with exactly one result.
    for (const id of ["call_read", "call_write"]) {
      const call = await store.toolCalls.get(run.id, id);
      expect(call?.state).toBe("finished");
      expect(call?.startedAt).not.toBeNull();
      expect(call?.resultMessageId).not.toBeNull();
    }

    // Each tool.started event went out in an earlier write than its result.
    const events = (await store.events.after(run.id, 0)).map((e) => JSON.parse(e.data));
    const startedAt = (id: string) => events.findIndex((e) => e.type === "tool.started" && e.toolCallId === id);
    const resultAt = (id: string) =>
      events.findIndex((e) => e.type === "message" && e.message.role === "tool" && e.message.toolCallId === id);
    const batchOf = (index: number) => batches().findIndex((batch) => batch.includes(events[index].seq));
    for (const id of ["call_read", "call_write"]) {
      expect(startedAt(id)).toBeGreaterThan(-1);
      expect(batchOf(startedAt(id))).toBeLessThan(batchOf(resultAt(id)));
    }
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it("a start that cannot be written runs no tool, and the call is closed as not executed", async () => {
    const { store, faulty, seen, manager, session, current } = await setup();
    faulty.failChange((change) => change.kind === "toolCall.started" && change.toolCallId === "call_read", {
      kind: "io",
      times: 1,
    });
    const { run } = await manager.start({ session, input: "go", maxTurns: 4 });
    current.runId = run.id;
    const finished = await manager.waitForFinish(run.id);
    expect(finished.stopReason).toBe("error");
    expect(seen.size).toBe(0);
    const results = (await store.messages.ofRun(session.id, run.id)).flatMap((m) =>
      m.role === "tool" ? [[m.toolCallId, m.metadata.errorCode]] : [],
    );
    expect(results).toEqual([
      ["call_read", "NOT_EXECUTED"],
      ["call_write", "NOT_EXECUTED"],
    ]);
  });
});
