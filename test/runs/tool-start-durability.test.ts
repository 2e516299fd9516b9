import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AgentTool, toolOk } from "../../src/agent/tool.js";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import { openDatabase } from "../../src/store/database.js";
import type { SessionRecord } from "../../src/store/sessions.js";
import { createStore, type Store } from "../../src/store/store.js";
import type { ToolCallState } from "../../src/store/tool-calls.js";
import { ScriptedModel } from "../fakes/scripted-model.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
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
      seen.set(toolCallId, store.toolCalls.get(runId, toolCallId)?.state);
      return toolOk("ok");
    },
  };
  return tool;
}

function setup() {
  const dir = tempDir("tool-start-");
  const db = openDatabase({ path: join(dir.path, "agent.db") });
  cleanups.push(() => {
    db.close();
    dir.cleanup();
  });
  const store = createStore(db);
  // Each call of events.insert is one write (one transaction): record which seqs went together.
  const batches: number[][] = [];
  const insert = store.events.insert.bind(store.events);
  store.events.insert = (events) => {
    batches.push(events.map((e) => e.seq));
    return insert(events);
  };
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
  const session: SessionRecord = {
    id: newId("ses"),
    owner: null,
    system: null,
    model: null,
    tools: null,
    approval: { default: "allow" },
    workspace: "w",
    workspaceShared: true,
    metadata: null,
    createdAt: new Date().toISOString(),
  };
  store.sessions.insert(session);
  return { store, seen, model, manager, session, current, batches };
}

describe("tool start durability", () => {
  it("a tool with effects is recorded as started before it runs; a read-only tool's start goes out with its result", async () => {
    const { store, seen, model, manager, session, current, batches } = setup();
    const { run } = manager.start({ session, input: "go", maxTurns: 4 });
    current.runId = run.id;
    const finished = await manager.waitForFinish(run.id);
    expect(finished.stopReason).toBe("complete");
    model.assertComplete();

    // What each tool saw in the ledger while it ran.
    expect(seen.get("call_write")).toBe("started");
    expect(seen.get("call_read")).not.toBe("started");

    // Afterwards both calls are finished, with a start time, each with exactly one result.
    for (const id of ["call_read", "call_write"]) {
      const call = store.toolCalls.get(run.id, id);
      expect(call?.state).toBe("finished");
      expect(call?.startedAt).not.toBeNull();
      expect(call?.resultMessageId).not.toBeNull();
    }

    // Both tools' tool.started events are stored, each before its result message; the
    // read-only one in the same write as its result, the other in a write of its own.
    const events = store.events.after(run.id, 0).map((e) => JSON.parse(e.data));
    const startedAt = (id: string) => events.findIndex((e) => e.type === "tool.started" && e.toolCallId === id);
    const resultAt = (id: string) =>
      events.findIndex((e) => e.type === "message" && e.message.role === "tool" && e.message.toolCallId === id);
    for (const id of ["call_read", "call_write"]) {
      expect(startedAt(id)).toBeGreaterThan(-1);
      expect(startedAt(id)).toBeLessThan(resultAt(id));
    }
    const batchOf = (index: number) => batches.findIndex((batch) => batch.includes(events[index].seq));
    expect(batchOf(startedAt("call_read"))).toBe(batchOf(resultAt("call_read")));
    expect(batchOf(startedAt("call_write"))).toBeLessThan(batchOf(resultAt("call_write")));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });
});
