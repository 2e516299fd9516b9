import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/database.js";
import { createSqliteStore } from "../../src/store/sqlite-store.js";

/** Every statement the SQLite store prepares, in the SQL text it prepares. */
function preparedStatements(): string[] {
  const db = openDatabase({ path: ":memory:" });
  const prepare = db.prepare.bind(db);
  const seen: string[] = [];
  db.prepare = ((sql: string) => {
    seen.push(sql.replace(/\s+/g, " ").trim());
    return prepare(sql);
  }) as typeof db.prepare;
  createSqliteStore(db);
  db.close();
  return seen;
}

/** The bound parameters of `sql` written bare (not as `+?`), outside string literals. */
function bareParameters(sql: string): string[] {
  const code = sql.replace(/'(?:[^']|'')*'/g, "''");
  return [...code.matchAll(/(^|[^+\s])\s*(\?\d*|[@:$][A-Za-z_]\w*)/g)].map((m) => (m[2] as string).trim());
}

describe("SQLite statements whose plan could depend on a bound value", () => {
  // The bundled SQLite (built with SQLITE_ENABLE_STAT4) marks a parameter of a query with
  // ORDER BY or LIMIT (min() and max() are planned as such), or of a join, as one whose value
  // may change the plan, and then re-prepares the statement at every call that binds it (~10-40
  // µs each, several such reads a run; a join of two rows by their keys took 16 µs against 7).
  // A parameter written `+?` is an expression the planner does not look into: same result, the
  // plan made once.
  it("write every parameter of a query with ORDER BY, LIMIT, min(), max() or a join as +? so the statement is planned once", () => {
    const statements = preparedStatements();
    expect(statements.length).toBeGreaterThan(30);
    const ordered = statements.filter((sql) => /\b(ORDER BY|LIMIT|JOIN|min\s*\(|max\s*\()/i.test(sql));
    expect(ordered.length).toBeGreaterThan(10);
    const offending = ordered.map((sql) => ({ sql, bare: bareParameters(sql) })).filter(({ bare }) => bare.length > 0);
    expect(offending).toEqual([]);
  });

  it("the check sees a bare parameter in a WHERE, a LIMIT and a named one, and accepts +?", () => {
    expect(bareParameters("SELECT * FROM t WHERE a = ? ORDER BY b")).toEqual(["?"]);
    expect(bareParameters("SELECT * FROM t WHERE a = +? ORDER BY b LIMIT ?")).toEqual(["?"]);
    expect(bareParameters("SELECT * FROM t WHERE a = +@a AND b > @b LIMIT +@limit")).toEqual(["@b"]);
    expect(bareParameters("SELECT * FROM t WHERE a = '?' AND b = +?1 LIMIT 1")).toEqual([]);
  });
});

/** The SQL the SQLite store prepares on `db`, and the plan of each, in detail lines. */
function storeStatementsOn(db: ReturnType<typeof openDatabase>): {
  find(pattern: RegExp): string;
  planOf(sql: string, params: unknown[] | Record<string, unknown>): string;
} {
  const prepare = db.prepare.bind(db);
  const seen: string[] = [];
  db.prepare = ((sql: string) => {
    seen.push(sql);
    return prepare(sql);
  }) as typeof db.prepare;
  createSqliteStore(db);
  return {
    find(pattern) {
      const found = seen.filter((sql) => pattern.test(sql.replace(/\s+/g, " ")));
      expect(found, String(pattern)).toHaveLength(1);
      return found[0] as string;
    },
    planOf: (sql, params) =>
      (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail).join(" | "),
  };
}

/**
 * An analyzed database with one large session (3,000 messages over 300 runs, one owner's 2,000
 * sessions) beside 200 small ones: the shape in which a plan that reads a whole history or a
 * whole list shows.
 */
function analyzedLargeSession(): ReturnType<typeof openDatabase> {
  const db = openDatabase({ path: ":memory:" });
  const session = db.prepare("INSERT INTO sessions (id, owner, workspace, created_at) VALUES (?, ?, ?, '2026-01-01')");
  const run = db.prepare(
    "INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at) VALUES (?, ?, 'finished', 'x', 5, '{}', '2026-01-01')",
  );
  const message = db.prepare(
    "INSERT INTO messages (id, session_id, run_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?, 'x', '2026-01-01')",
  );
  db.transaction(() => {
    session.run("ses_big", "owner_big", "ses_big");
    for (let r = 0; r < 300; r++) {
      run.run(`run_big_${r}`, "ses_big");
      for (const [i, role] of [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
      ].entries())
        message.run(`msg_big_${r}_${i}`, "ses_big", `run_big_${r}`, r * 10 + i + 1, role);
    }
    for (let s = 0; s < 2000; s++) session.run(`ses_owned_${s}`, "owner_big", `ses_owned_${s}`);
    for (let s = 0; s < 200; s++) {
      session.run(`ses_${s}`, null, `ses_${s}`);
      run.run(`run_${s}`, `ses_${s}`);
      message.run(`msg_${s}_u`, `ses_${s}`, `run_${s}`, 1, "user");
      message.run(`msg_${s}_a`, `ses_${s}`, `run_${s}`, 2, "assistant");
    }
  })();
  db.exec("ANALYZE");
  return db;
}

describe("SQLite reads that stay bounded in a large session", () => {
  it("a keyed steer finds the user message its input became by its id, not by reading the session's history", () => {
    const db = analyzedLargeSession();
    const store = storeStatementsOn(db);
    const id = "inp_absent";
    for (const plan of [
      store.planOf(store.find(/FROM messages WHERE session_id = \? AND id = \?/), ["x", "ses_big", id]),
      store.planOf(store.find(/^INSERT INTO run_inputs/), {
        id,
        run_id: "run_big_7",
        content: "x",
        created_at: "x",
        run_settings: null,
      }),
    ]) {
      expect(plan).toMatch(/SEARCH messages USING INDEX messages_user_id \(id=\?\)/);
      expect(plan).not.toMatch(/messages USING INDEX sqlite_autoindex_messages_1 \(session_id=\?\)/);
    }
    db.close();
  });

  it("a start under an idempotency key finds a steer's input by index lookups alone, not by reading the session", () => {
    const db = analyzedLargeSession();
    const store = storeStatementsOn(db);
    const plan = store.planOf(store.find(/^SELECT EXISTS \(SELECT 1 FROM run_inputs i WHERE i\.id = /), {
      session: "ses_big",
      id: "msg_absent",
      key: "\nleft msg_absent",
      run: "run_absent",
    });
    // Each part a probe of an index: the input by id, its run by id, the user message by id, the
    // run made of the input by its key or its id. Nothing of the session's history or runs is read.
    expect(plan).not.toMatch(/(^| \| )SCAN (?!CONSTANT ROW)/);
    expect(plan).toMatch(/SEARCH i USING INDEX sqlite_autoindex_run_inputs_1 \(id=\?\)/);
    expect(plan).toMatch(/SEARCH messages USING INDEX messages_user_id \(id=\?\)/);
    expect(plan).toMatch(/SEARCH runs USING COVERING INDEX runs_idempotency \(session_id=\? AND idempotency_key=\?\)/);
    expect(plan).toMatch(/SEARCH runs USING INDEX sqlite_autoindex_runs_1 \(id=\?\)/);
    db.close();
  });

  it("a page of sessions or runs after a cursor starts its index range at the cursor (its sizes' read and its rows' read)", () => {
    const db = analyzedLargeSession();
    const store = storeStatementsOn(db);
    for (const read of [
      /^SELECT \* FROM sessions WHERE .* id < /,
      /^SELECT octet_length.* FROM sessions WHERE .* id < /,
    ]) {
      expect(store.planOf(store.find(read), { owner: "owner_big", cursor: "ses_owned_5", limit: 21 })).toMatch(
        /\(owner=\? AND id<\?\)/,
      );
    }
    for (const read of [
      /^SELECT \* FROM runs WHERE session_id = .* id < /,
      /^SELECT octet_length.* FROM runs WHERE session_id = .* id < /,
    ]) {
      expect(store.planOf(store.find(read), { session: "ses_big", cursor: "run_big_5", limit: 21 })).toMatch(
        /\(session_id=\? AND id<\?\)/,
      );
    }
    // A page of messages, sizes and rows alike, is a range of the session's (session_id, seq) index, unsorted.
    for (const read of [
      /^SELECT \* FROM messages WHERE .* seq > .* LIMIT/,
      /^SELECT octet_length.* FROM messages WHERE .* seq > /,
    ]) {
      const plan = store.planOf(store.find(read), { session: "ses_big", after: 100, limit: 21 });
      expect(plan).toMatch(/\(session_id=\? AND seq>\?\)/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
    }
    db.close();
  });

  it("a page of a run's steps, calls awaiting approval or webhook deliveries is a range of an index after its cursor, unsorted", () => {
    const db = analyzedLargeSession();
    const store = storeStatementsOn(db);
    const lists = [
      { table: "run_steps", range: /\(run_id=\? AND turn>\?\)/ },
      { table: "tool_calls", range: /USING INDEX tool_calls_awaiting \(run_id=\? AND ordinal>\?\)/ },
      { table: "webhook_deliveries", range: /\(run_id=\? AND event_seq>\?\)/ },
    ];
    for (const { table, range } of lists) {
      // The page's sizes, then its rows (see rowsToRead).
      for (const read of [
        new RegExp(`^SELECT octet_length.* FROM ${table} WHERE run_id`),
        new RegExp(`^SELECT (?!octet_length).* FROM ${table} WHERE run_id = \\+@run.* LIMIT`),
      ]) {
        const plan = store.planOf(store.find(read), { run: "run_big_7", after: 3, limit: 21 });
        expect(plan, table).toMatch(range);
        expect(plan, table).not.toMatch(/TEMP B-TREE/);
      }
    }
    db.close();
  });

  it("a run's last step trace is the end of its (run_id, turn) key, with no sort", () => {
    const db = analyzedLargeSession();
    const store = storeStatementsOn(db);
    const plan = store.planOf(store.find(/^SELECT data FROM run_steps WHERE .* DESC LIMIT 1/), ["run_big_7"]);
    expect(plan).toMatch(/\(run_id=\?\)/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
    db.close();
  });

  it("a run's messages come from its index in seq order, with no sort", () => {
    const db = analyzedLargeSession();
    const store = storeStatementsOn(db);
    const run = ["ses_big", "run_big_7"];
    const ofRun = /^SELECT \* FROM messages WHERE session_id = \+\? AND run_id = \+\? AND seq > \+\? ORDER BY seq$/;
    for (const plan of [
      store.planOf(store.find(ofRun), [...run, 0]),
      store.planOf(store.find(ofRun), [...run, 20]),
      store.planOf(store.find(/FROM messages WHERE .* role = 'assistant' ORDER BY seq DESC LIMIT 1/), run),
    ]) {
      expect(plan).toMatch(/SEARCH messages USING INDEX messages_run_seq \(run_id=\?/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
    }
    db.close();
  });
});

describe("SQLite's read of a run's plan", () => {
  it("its last plan event is the end of the run's range of run_events_plans, with no sort", () => {
    const db = analyzedLargeSession();
    const event = db.prepare("INSERT INTO run_events (run_id, seq, type, data) VALUES (?, ?, ?, '{}')");
    db.transaction(() => {
      for (let seq = 1; seq <= 2000; seq++) event.run("run_big_7", seq, seq % 100 === 0 ? "plan.updated" : "message");
    })();
    db.exec("ANALYZE");
    const store = storeStatementsOn(db);
    const plan = store.planOf(store.find(/FROM run_events WHERE .* type = 'plan.updated' ORDER BY seq DESC LIMIT 1/), {
      run: "run_big_7",
      within: 0,
    });
    expect(plan).toMatch(/^SEARCH run_events USING INDEX run_events_plans \(run_id=\?\)$/);
    db.close();
  });
});

describe("SQLite's check for a session's unfinished runs", () => {
  it("reads the partial indexes of active and of queued runs, not every run of the session", () => {
    const db = analyzedLargeSession();
    const store = storeStatementsOn(db);
    const plan = store.planOf(store.find(/^SELECT EXISTS \(SELECT 1 FROM runs WHERE session_id/), { id: "ses_big" });
    expect(plan).toMatch(/USING (COVERING )?INDEX runs_one_active \(session_id=\?\)/);
    expect(plan).toMatch(/USING (COVERING )?INDEX runs_queue \(session_id=\?\)/);
    expect(plan).not.toMatch(/runs_session/);
    // Whether it has queued runs, and their ids: the queue's index alone, in its order (no sort).
    for (const sql of [
      /^SELECT 1 FROM runs WHERE session_id = \+\? AND status = 'queued'/,
      /^SELECT id FROM runs WHERE session_id = \+\? AND status = 'queued'/,
    ]) {
      expect(store.planOf(store.find(sql), ["ses_big"])).toMatch(
        /^SEARCH runs USING COVERING INDEX runs_queue \(session_id=\?\)$/,
      );
    }
    db.close();
  });
});

describe("SQLite statements that must stay bounded whatever the statistics say", () => {
  // ANALYZE (an operator's, or PRAGMA optimize) records run_inputs as empty, which made a join
  // of it with runs start from runs: a scan of every run ever stored at each start.
  it("orphaned input is found from the pending inputs, each run looked up by id, also after ANALYZE", () => {
    const db = openDatabase({ path: ":memory:" });
    const insertSession = db.prepare("INSERT INTO sessions (id, workspace, created_at) VALUES (?, ?, '2026-01-01')");
    const insertRun = db.prepare(
      "INSERT INTO runs (id, session_id, status, input, max_turns, stats, created_at) VALUES (?, ?, 'finished', 'x', 5, '{}', '2026-01-01')",
    );
    db.transaction(() => {
      for (let s = 0; s < 200; s++) {
        insertSession.run(`ses_${s}`, `ses_${s}`);
        for (let r = 0; r < 10; r++) insertRun.run(`run_${s}_${r}`, `ses_${s}`);
      }
    })();
    db.exec("ANALYZE");
    const store = storeStatementsOn(db);
    const plan = store.planOf(store.find(/SELECT i\.\* FROM run_inputs i WHERE \(SELECT/), []);
    expect(plan).not.toMatch(/(^| \| )SCAN (runs|r)\b/);
    expect(plan).toMatch(/SEARCH r USING INDEX sqlite_autoindex_runs_1 \(id=\?\)/);
    // The input a repeated steer left on an ended run: found by its id, its run by id.
    const left = store.planOf(store.find(/SELECT run_id, content = \? AS same FROM run_inputs i WHERE id = \?/), [
      "x",
      "msg_x",
    ]);
    expect(left).not.toMatch(/(^| \| )SCAN /);
    expect(left).toMatch(/SEARCH i USING INDEX sqlite_autoindex_run_inputs_1 \(id=\?\)/);
    // The input a refused steer queues as a run: read by its id, its run by id.
    const one = store.planOf(store.find(/SELECT i\.\* FROM run_inputs i WHERE id = \?/), ["msg_x"]);
    expect(one).not.toMatch(/(^| \| )SCAN /);
    expect(one).toMatch(/SEARCH i USING INDEX sqlite_autoindex_run_inputs_1 \(id=\?\)/);
    // The inputs a run's end left on it: their ids from the run's own index entries, its status by id.
    const leftOn = store.planOf(store.find(/SELECT i\.id FROM run_inputs i WHERE run_id = \+\?/), ["run_0_0"]);
    expect(leftOn).not.toMatch(/(^| \| )SCAN /);
    expect(leftOn).toMatch(/SEARCH i USING COVERING INDEX run_inputs_run \(run_id=\?\)/);
    db.close();
  });
});

describe("SQLite's webhook claim", () => {
  // One owner's backlog of 3,000 due deliveries beside another's few, analyzed: each owner is
  // found with one probe of webhook_deliveries_owner_due and its oldest are read from its range.
  it("finds the owners and each owner's oldest due deliveries on webhook_deliveries_owner_due, with no sort", () => {
    const db = analyzedLargeSession();
    const delivery = db.prepare(
      `INSERT INTO webhook_deliveries (id, run_id, event_seq, type, url, body, status, attempts, next_attempt_at,
         created_at, owner) VALUES (?, ?, ?, 'run.finished', 'https://h', '{}', 'pending', '[]', ?, 'x', ?)`,
    );
    db.transaction(() => {
      for (let i = 0; i < 3000; i++) delivery.run(`msg_a_${i}`, `run_big_${i % 300}`, i, i, "owner_big");
      for (let i = 0; i < 5; i++) delivery.run(`msg_b_${i}`, `run_${i}`, 1, 5000 + i, "");
    })();
    db.exec("ANALYZE");
    const store = storeStatementsOn(db);
    const first = store.planOf(
      store.find(/^SELECT owner FROM webhook_deliveries WHERE status = 'pending' ORDER BY owner LIMIT 1$/),
      [],
    );
    expect(first).toMatch(/USING COVERING INDEX webhook_deliveries_owner_due$/);
    const next = store.planOf(store.find(/^SELECT owner FROM webhook_deliveries .* owner > /), [""]);
    expect(next).toMatch(/USING COVERING INDEX webhook_deliveries_owner_due \(owner>\?\)/);
    const due = store.planOf(store.find(/^SELECT \* FROM webhook_deliveries .* owner = /), ["owner_big", 10_000, 4]);
    expect(due).toMatch(/USING INDEX webhook_deliveries_owner_due \(owner=\? AND next_attempt_at<\?\)/);
    expect(due).not.toMatch(/TEMP B-TREE/);
    db.close();
  });
});
