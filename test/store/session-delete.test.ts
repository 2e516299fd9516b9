import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import { type Db, openDatabase } from "../../src/store/database.js";
import { isConflict } from "../../src/store/errors.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

const RUNS = 6;
const EVENTS_PER_RUN = 1200;
const PIECE_ROWS = 500;
const runIds = Array.from({ length: RUNS }, (_, r) => `run_big_${r}`);

let dir: ReturnType<typeof tempDir>;
let db: Db;
let store: Store;

/** A finished session of RUNS runs (events, messages, tool calls, steps) written as rows, beside a small one. */
function fill(sessionId: string, runs: readonly string[], events: number): void {
  const at = "2026-01-01T00:00:00.000Z";
  const session = db.prepare("INSERT INTO sessions (id, workspace, created_at) VALUES (?, ?, ?)");
  const run = db.prepare(
    "INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at) VALUES (?, ?, 'finished', 'x', 5, ?, ?)",
  );
  const event = db.prepare("INSERT INTO run_events (run_id, seq, type, data) VALUES (?, ?, 'text.delta', '{}')");
  const message = db.prepare(
    "INSERT INTO messages (id, session_id, run_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?, 'x', ?)",
  );
  const toolCall = db.prepare(
    "INSERT INTO tool_calls (run_id, id, ordinal, name, input, state, proposed_at) VALUES (?, 'call_1', 0, 'list_files', '{}', 'finished', ?)",
  );
  const step = db.prepare("INSERT INTO run_steps (run_id, turn, data) VALUES (?, 1, '{}')");
  db.transaction(() => {
    session.run(sessionId, sessionId, at);
    runs.forEach((id, r) => {
      run.run(id, sessionId, JSON.stringify(emptyStats()), at);
      for (let seq = 1; seq <= events; seq++) event.run(id, seq);
      message.run(`${id}_user`, sessionId, id, 2 * r + 1, "user", at);
      message.run(`${id}_answer`, sessionId, id, 2 * r + 2, "assistant", at);
      toolCall.run(id, at);
      step.run(id);
    });
  })();
}

const count = (table: string, where: string, value: string) =>
  (db.prepare(`SELECT count(*) FROM ${table} WHERE ${where} = ?`).pluck().get(value) as number) ?? 0;

beforeEach(() => {
  dir = tempDir("session-delete-");
  db = openDatabase({ path: join(dir.path, "agent.db") });
  fill("ses_big", runIds, EVENTS_PER_RUN);
  fill("ses_small", ["run_small"], 3);
  store = createSqliteStore(db, { deletePieceRows: PIECE_ROWS });
});

afterEach(() => {
  db.close();
  dir.cleanup();
});

describe("deleting a session over SQLite", () => {
  it("leaves no row of the session and every row of the others", async () => {
    expect(await store.sessions.delete("ses_big")).toBe(true);
    expect(count("sessions", "id", "ses_big")).toBe(0);
    for (const id of runIds) {
      for (const table of ["runs"]) expect(count(table, "id", id)).toBe(0);
      for (const table of ["run_events", "messages", "tool_calls", "run_steps"])
        expect(count(table, "run_id", id), table).toBe(0);
    }
    expect(count("run_events", "run_id", "run_small")).toBe(3);
    expect(count("messages", "session_id", "ses_small")).toBe(2);
    expect(await store.sessions.get("ses_small")).not.toBeNull();
    expect(await store.sessions.delete("ses_big")).toBe(false);
  });

  // One transaction for the whole session held the event loop, and every other run's commit,
  // for as long as it took (165-196 ms here for 100,000 events and 20,000 messages).
  it("goes a bounded piece at a time, newest run first: other writes commit meanwhile, and readers see the session as it was before its newest runs", async () => {
    let deleted = false;
    const deletion = store.sessions.delete("ses_big").then((found) => {
      deleted = true;
      return found;
    });
    const seen: string[][] = [];
    let writesMeanwhile = 0;
    for (let i = 0; !deleted; i++) {
      await seedSession(store, { id: `ses_meanwhile_${i}` });
      if (deleted) break;
      writesMeanwhile++;
      const page = await store.runs.list({ sessionId: "ses_big", limit: 100, cursor: null });
      seen.push(page.items.map((r) => r.id).reverse());
    }
    expect(await deletion).toBe(true);
    // Each run's events take ceil(1200 / 500) pieces, then one more removes the run.
    expect(writesMeanwhile).toBeGreaterThanOrEqual(RUNS * 2);
    for (const ids of seen) expect(ids).toEqual(runIds.slice(0, ids.length));
    expect(new Set(seen.map((ids) => ids.length)).size).toBeGreaterThan(RUNS / 2);
    expect(count("sessions", "id", "ses_big")).toBe(0);
  });

  it.each(["running", "queued"])(
    "a session with a run %s is refused before any piece: nothing of it is deleted",
    async (status) => {
      db.prepare("UPDATE runs SET status = ? WHERE id = ?").run(status, "run_big_2");
      await expect(store.sessions.delete("ses_big")).rejects.toSatisfy((err) => isConflict(err, "active_run"));
      expect(count("runs", "session_id", "ses_big")).toBe(RUNS);
      expect(count("run_events", "run_id", "run_big_5")).toBe(EVENTS_PER_RUN);
      expect(count("sessions", "id", "ses_big")).toBe(1);
    },
  );
});
