import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AgentTool, toolOk } from "../../src/agent/tool.js";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import { openDatabase } from "../../src/store/database.js";
import { createStore, type Store } from "../../src/store/store.js";
import type { ToolCallState } from "../../src/store/tool-calls.js";
import { ScriptedModel } from "../fakes/scripted-model.js";
import { seedSession } from "../helpers/seed.js";
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
  const session = seedSession(store, { id: newId("ses"), approval: { default: "allow" } });
  return { store, seen, model, manager, session, current, batches };
}

describe("tool start durability", () => {
  it("every tool, read-only or not, is recorded as started in a write of its own before it runs", async () => {
    const { store, seen, model, manager, session, current, batches } = setup();
    const { run } = manager.start({ session, input: "go", maxTurns: 4 });
    current.runId = run.id;
    const finished = await manager.waitForFinish(run.id);
    expect(finished.stopReason).toBe("complete");
    model.assertComplete();

    // What each tool saw in the ledger while it ran: its own start, already stored.
    expect(seen.get("call_read")).toBe("started");
    expect(seen.get("call_write")).toBe("started");

    // Afterwards both calls are finished, each with exactly one result.
    for (const id of ["call_read", "call_write"]) {
      const call = store.toolCalls.get(run.id, id);
      expect(call?.state).toBe("finished");
      expect(call?.startedAt).not.toBeNull();
      expect(call?.resultMessageId).not.toBeNull();
    }

    // Each tool.started event went out in an earlier write than its result.
    const events = store.events.after(run.id, 0).map((e) => JSON.parse(e.data));
    const startedAt = (id: string) => events.findIndex((e) => e.type === "tool.started" && e.toolCallId === id);
    const resultAt = (id: string) =>
      events.findIndex((e) => e.type === "message" && e.message.role === "tool" && e.message.toolCallId === id);
    const batchOf = (index: number) => batches.findIndex((batch) => batch.includes(events[index].seq));
    for (const id of ["call_read", "call_write"]) {
      expect(startedAt(id)).toBeGreaterThan(-1);
      expect(batchOf(startedAt(id))).toBeLessThan(batchOf(resultAt(id)));
    }
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it("a start that cannot be written runs no tool, and the call is closed as not executed", async () => {
    const { store, seen, manager, session, current } = setup();
    const start = store.toolCalls.start.bind(store.toolCalls);
    store.toolCalls.start = (...args) => {
      if (args[1] === "call_read") throw Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR" });
      return start(...args);
    };
    const { run } = manager.start({ session, input: "go", maxTurns: 4 });
    current.runId = run.id;
    const finished = await manager.waitForFinish(run.id);
    expect(finished.stopReason).toBe("error");
    expect(seen.size).toBe(0);
    const results = store.messages
      .ofRun(session.id, run.id)
      .flatMap((m) => (m.role === "tool" ? [[m.toolCallId, m.metadata.errorCode]] : []));
    expect(results).toEqual([
      ["call_read", "NOT_EXECUTED"],
      ["call_write", "NOT_EXECUTED"],
    ]);
  });
});
