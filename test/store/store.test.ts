import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/messages.js";
import { toAgentMessage } from "../../src/domain/stored-message.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { type Db, openDatabase } from "../../src/store/database.js";
import { migrationFiles, migrationsDir, runMigrations } from "../../src/store/migrations.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { FaultyStore } from "../fakes/faulty-store.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

let dir: ReturnType<typeof tempDir>;
let dbPath: string;
let db: Db;
let store: Store;

async function seedRun(s: Store, sessionId = "ses_1", runId = "run_1") {
  await seedSession(s, { id: sessionId, metadata: { team: "a" } });
  await s.runs.create(runRecord({ id: runId, sessionId }), []);
}

const recorderOf = (s: Store, hub = new EventHub()) =>
  RunRecorder.open({ store: s, hub, runId: "run_1", sessionId: "ses_1" });

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
  store = createSqliteStore(db);
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
    const files = migrationFiles(migrationsDir("sqlite")).map((m) => ({ name: m.file }));
    expect(files.length).toBeGreaterThanOrEqual(5);
    expect(applied).toEqual(files);
  });

  it("the history read back after reopening equals what was committed, with gapless events", async () => {
    await seedRun(store);
    const recorder = await recorderOf(store);
    for (const m of conversation) await recorder.commitMessage(m);
    db.close();

    db = openDatabase({ path: dbPath });
    store = createSqliteStore(db);
    const history = await store.messages.history("ses_1");
    expect(history.map(toAgentMessage)).toEqual(conversation);
    expect(history.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    const events = await store.events.after("run_1", 0);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(events.every((e) => e.type === "message")).toBe(true);
    expect(JSON.parse(events[1]?.data ?? "{}").message.toolCalls).toHaveLength(2);
    expect((await store.sessions.get("ses_1"))?.metadata).toEqual({ team: "a" });
  });

  it("a commit that fails leaves neither the message nor its event, and the next takes the next seq", async () => {
    await seedRun(store);
    const faulty = new FaultyStore(store);
    const hub = new EventHub();
    const seen: number[] = [];
    hub.subscribe("run_1", (e) => seen.push(e.seq));
    const recorder = await recorderOf(faulty.store, hub);
    await recorder.commitMessage({ id: "m1", role: "user", content: "first" });
    faulty.failNthCommit(1);
    await expect(recorder.commitMessage({ id: "m2", role: "user", content: "second" })).rejects.toThrow(
      "disk I/O error",
    );
    expect((await store.messages.history("ses_1")).map((m) => m.id)).toEqual(["m1"]);
    expect((await store.events.after("run_1", 0)).map((e) => e.seq)).toEqual([1]);
    expect(seen).toEqual([1]);
    // No gap in the messages or in the events.
    await recorder.commitMessage({ id: "m3", role: "user", content: "third" });
    expect((await store.messages.history("ses_1")).map((m) => m.seq)).toEqual([1, 2]);
    expect((await store.events.after("run_1", 0)).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("a batch the data refuses is written not at all: a decision on a call already decided", async () => {
    await seedRun(store);
    const recorder = await recorderOf(store);
    await recorder.commitMessage(conversation[1] as AgentMessage);
    const decide = (decision: "approve" | "deny") =>
      store.commitRun(
        "run_1",
        [
          { kind: "toolCall.decided", toolCallId: "c1", decision, reason: null, at: "now" },
          { kind: "status", status: "cancelling" },
        ],
        [],
      );
    await decide("approve");
    await expect(decide("deny")).rejects.toMatchObject({ code: "STORE_CONFLICT", rule: "decided" });
    expect((await store.toolCalls.get("run_1", "c1"))?.decision).toBe("approve");
  });

  it("buffered text deltas are written before the message that follows them, in seq order", async () => {
    await seedRun(store);
    const recorder = await recorderOf(store);
    recorder.buffer({ type: "text.delta", text: "he" });
    recorder.buffer({ type: "turn.started", turn: 1 });
    recorder.buffer({ type: "text.delta", text: "llo" });
    expect(await store.events.after("run_1", 0)).toEqual([]);
    await recorder.commitMessage({ id: "m1", role: "assistant", content: "hello" });
    const events = await store.events.after("run_1", 0);
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, "text.delta"],
      [2, "turn.started"],
      [3, "text.delta"],
      [4, "message"],
    ]);
    recorder.dispose();
  });

  it("text deltas buffered one after another are written (and published) as one event, up to 1024 characters", async () => {
    await seedRun(store);
    const hub = new EventHub();
    const published: string[] = [];
    hub.subscribe("run_1", (event) => published.push(event.type));
    const recorder = await recorderOf(store, hub);
    for (const piece of ["Hel", "lo, ", "world"]) recorder.buffer({ type: "text.delta", text: piece });
    recorder.buffer({ type: "text.delta", text: "x".repeat(1020) });
    await recorder.commitMessage({ id: "m1", role: "assistant", content: "…" });
    const deltas = (await store.events.after("run_1", 0))
      .filter((e) => e.type === "text.delta")
      .map((e) => JSON.parse(e.data).text);
    expect(deltas).toEqual(["Hello, world", "x".repeat(1020)]);
    expect(published).toEqual(["text.delta", "text.delta", "message"]);
    recorder.dispose();
  });

  it("after a failed background write, text that keeps merging into one delta is still written within the delay", async () => {
    await seedRun(store);
    const hub = new EventHub();
    const published: string[] = [];
    hub.subscribe("run_1", (event) => published.push(JSON.parse(event.data).text));
    const faulty = new FaultyStore(store);
    const recorder = await recorderOf(faulty.store, hub);
    faulty.failNthCommit(1, "busy");
    recorder.buffer({ type: "text.delta", text: "a" });
    // The background write fails (waited for, not for a fixed 30 ms a loaded machine could outlast).
    await until(
      () => faulty.commits.length,
      (n) => n === 1,
      "the background write",
    );
    expect(published).toEqual([]);
    recorder.buffer({ type: "text.delta", text: "b" }); // merges into the kept "a"
    // Written once, merged, by the retry (RETRY_DELAY_MS) that "b" asked for: waited for up to
    // 10 s rather than a fixed 50 ms; a delta that no write takes still fails it.
    await until(
      () => published.length,
      (n) => n > 0,
      "the retried write to be published",
    );
    expect(published).toEqual(["ab"]);
    expect(faulty.commits).toHaveLength(2);
    recorder.dispose();
  });

  it("a message whose JSON was corrupted on disk is refused when read back", async () => {
    await seedRun(store);
    const recorder = await recorderOf(store);
    await recorder.commitMessage(conversation[1] as AgentMessage);
    db.prepare("UPDATE messages SET tool_calls = '[{\"id\":1}]'").run();
    await expect(store.messages.history("ses_1")).rejects.toThrow(/does not match its schema/);
  });

  it("the database keeps one unfinished run per session: a second is refused (active_run)", async () => {
    await seedRun(store);
    await expect(store.runs.create(runRecord({ id: "run_2", sessionId: "ses_1" }), [])).rejects.toMatchObject({
      code: "STORE_CONFLICT",
      rule: "active_run",
    });
    await store.commitRun(
      "run_1",
      [
        {
          kind: "finish",
          stopReason: "complete",
          stopDetail: null,
          error: null,
          stats: runRecord({ id: "x", sessionId: "x" }).stats,
          finishedAt: "now",
        },
      ],
      [],
    );
    await store.runs.create(runRecord({ id: "run_2", sessionId: "ses_1" }), []);
    expect((await store.runs.active("ses_1"))?.id).toBe("run_2");
  });

  it("a full disk crosses the store as a StorageError of kind full, recorded until a write succeeds", async () => {
    await seedRun(store);
    const pages = db.pragma("page_count", { simple: true });
    db.pragma(`max_page_count = ${pages}`);
    const big = { id: "m1", role: "user" as const, content: "z".repeat(200_000) };
    const recorder = await recorderOf(store);
    await expect(recorder.commitMessage(big)).rejects.toMatchObject({ name: "StorageError", kind: "full" });
    expect(store.writeFailure()?.message).toMatch(/disk is full/);
    db.pragma("max_page_count = 1073741823");
    await recorder.commitMessage(big);
    expect(store.writeFailure()).toBeNull();
  });

  it("deleting a session deletes its runs, messages, events and ledger", async () => {
    await seedRun(store);
    const recorder = await recorderOf(store);
    await recorder.commitMessage(conversation[1] as AgentMessage);
    await store.commitRun("run_1", [finishChange()], []);
    expect(await store.sessions.delete("ses_1")).toBe(true);
    for (const table of ["runs", "messages", "run_events", "tool_calls"]) {
      expect(db.prepare(`SELECT count(*) AS n FROM ${table}`).get()).toEqual({ n: 0 });
    }
  });
});
