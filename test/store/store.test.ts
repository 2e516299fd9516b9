import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/messages.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunRecorder } from "../../src/runs/run-recorder.js";
import { type Db, openDatabase } from "../../src/store/database.js";
import { toAgentMessage } from "../../src/store/messages.js";
import { runMigrations } from "../../src/store/migrations.js";
import { createStore, type Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir>;
let dbPath: string;
let db: Db;
let store: Store;

function seedRun(s: Store, sessionId = "ses_1", runId = "run_1") {
  seedSession(s, { id: sessionId, metadata: { team: "a" } });
  s.runs.insert(runRecord({ id: runId, sessionId }));
}

const conversation: AgentMessage[] = [
  { id: "m1", role: "user", content: "list the files" },
  {
    id: "m2",
    role: "assistant",
    content: "",
    toolCalls: [
      { id: "c1", name: "list_files", input: "{}" },
      { id: "c2", name: "read_file", input: '{"path":"a.txt"}' },
    ],
  },
  {
    id: "m3",
    role: "tool",
    toolCallId: "c1",
    content: "a.txt",
    isError: false,
    metadata: { errorCode: null, retryable: false, durationMs: 3, outputChars: 5, truncated: false },
  },
  {
    id: "m4",
    role: "tool",
    toolCallId: "c2",
    content: "no such file",
    isError: true,
    metadata: { errorCode: "NOT_FOUND", retryable: true, durationMs: 1, outputChars: 12, truncated: false },
  },
  { id: "m5", role: "assistant", content: "done" },
];

beforeEach(() => {
  dir = tempDir();
  dbPath = join(dir.path, "agent.db");
  db = openDatabase({ path: dbPath });
  store = createStore(db);
});

afterEach(() => {
  if (db.open) db.close();
  dir.cleanup();
});

describe("store", () => {
  it("opens with WAL and foreign keys on, and re-running the migrations is a no-op", () => {
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(runMigrations(db)).toEqual([]);
    const applied = db.prepare("SELECT name FROM schema_migrations").all();
    expect(applied).toEqual([{ name: "0001_init.sql" }]);
  });

  it("the history read back after reopening equals what was committed, with gapless events", () => {
    seedRun(store);
    const recorder = new RunRecorder(store, new EventHub(), "run_1", "ses_1");
    for (const m of conversation) recorder.commitMessage(m);
    db.close();

    db = openDatabase({ path: dbPath });
    store = createStore(db);
    const history = store.messages.history("ses_1");
    expect(history.map(toAgentMessage)).toEqual(conversation);
    expect(history.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    const events = store.events.after("run_1", 0);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(events.every((e) => e.type === "message")).toBe(true);
    expect(JSON.parse(events[1]?.data ?? "{}").message.toolCalls).toHaveLength(2);
    expect(store.sessions.get("ses_1")?.metadata).toEqual({ team: "a" });
  });

  it("a failure half-way through a commit leaves neither the message nor its event", () => {
    seedRun(store);
    const hub = new EventHub();
    const seen: number[] = [];
    hub.subscribe("run_1", (e) => seen.push(e.seq));
    const recorder = new RunRecorder(store, hub, "run_1", "ses_1");
    recorder.commitMessage({ id: "m1", role: "user", content: "first" });
    expect(() =>
      recorder.commitMessage({ id: "m2", role: "user", content: "second" }, () => {
        throw new Error("disk gone");
      }),
    ).toThrow("disk gone");
    expect(store.messages.history("ses_1").map((m) => m.id)).toEqual(["m1"]);
    expect(store.events.after("run_1", 0).map((e) => e.seq)).toEqual([1]);
    expect(seen).toEqual([1]);
    // The next commit takes the next seq: no gap in the messages or in the events.
    recorder.commitMessage({ id: "m3", role: "user", content: "third" });
    expect(store.messages.history("ses_1").map((m) => m.seq)).toEqual([1, 2]);
    expect(store.events.after("run_1", 0).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("buffered text deltas are written before the message that follows them, in seq order", () => {
    seedRun(store);
    const recorder = new RunRecorder(store, new EventHub(), "run_1", "ses_1");
    recorder.buffer({ type: "text.delta", text: "he" });
    recorder.buffer({ type: "turn.started", turn: 1 });
    recorder.buffer({ type: "text.delta", text: "llo" });
    expect(store.events.after("run_1", 0)).toEqual([]);
    recorder.commitMessage({ id: "m1", role: "assistant", content: "hello" });
    const events = store.events.after("run_1", 0);
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, "text.delta"],
      [2, "turn.started"],
      [3, "text.delta"],
      [4, "message"],
    ]);
    recorder.dispose();
  });

  it("text deltas buffered one after another are written (and published) as one event, up to 1024 characters", () => {
    seedRun(store);
    const hub = new EventHub();
    const published: string[] = [];
    hub.subscribe("run_1", (event) => published.push(event.type));
    const recorder = new RunRecorder(store, hub, "run_1", "ses_1");
    for (const piece of ["Hel", "lo, ", "world"]) recorder.buffer({ type: "text.delta", text: piece });
    recorder.buffer({ type: "text.delta", text: "x".repeat(1020) });
    recorder.commitMessage({ id: "m1", role: "assistant", content: "…" });
    const deltas = store.events
      .after("run_1", 0)
      .filter((e) => e.type === "text.delta")
      .map((e) => JSON.parse(e.data).text);
    expect(deltas).toEqual(["Hello, world", "x".repeat(1020)]);
    expect(published).toEqual(["text.delta", "text.delta", "message"]);
    recorder.dispose();
  });

  it("after a failed background write, text that keeps merging into one delta is still written within the delay", async () => {
    seedRun(store);
    const hub = new EventHub();
    const published: string[] = [];
    hub.subscribe("run_1", (event) => published.push(JSON.parse(event.data).text));
    const recorder = new RunRecorder(store, hub, "run_1", "ses_1");
    const transaction = store.transaction.bind(store);
    let failNext = true;
    store.transaction = ((fn: () => unknown) => {
      if (failNext) {
        failNext = false;
        throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
      }
      return transaction(fn);
    }) as typeof store.transaction;
    recorder.buffer({ type: "text.delta", text: "a" });
    await new Promise((resolve) => setTimeout(resolve, 30)); // the background write fails
    expect(published).toEqual([]);
    recorder.buffer({ type: "text.delta", text: "b" }); // merges into the kept "a"
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(published).toEqual(["ab"]);
    recorder.dispose();
  });

  it("a message whose JSON was corrupted on disk is refused when read back", () => {
    seedRun(store);
    const recorder = new RunRecorder(store, new EventHub(), "run_1", "ses_1");
    recorder.commitMessage(conversation[1] as AgentMessage);
    db.prepare("UPDATE messages SET tool_calls = '[{\"id\":1}]'").run();
    expect(() => store.messages.history("ses_1")).toThrow(/does not match its schema/);
  });

  it("deleting a session deletes its runs, messages, events and ledger", () => {
    seedRun(store);
    const recorder = new RunRecorder(store, new EventHub(), "run_1", "ses_1");
    recorder.commitMessage(conversation[1] as AgentMessage, () =>
      store.toolCalls.propose("run_1", [{ id: "c1", name: "list_files", input: "{}" }], "now"),
    );
    expect(store.sessions.delete("ses_1")).toBe(true);
    for (const table of ["runs", "messages", "run_events", "tool_calls"]) {
      expect(db.prepare(`SELECT count(*) AS n FROM ${table}`).get()).toEqual({ n: 0 });
    }
  });
});
