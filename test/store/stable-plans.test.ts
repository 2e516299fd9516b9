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
  // ORDER BY or LIMIT (min() and max() are planned as such) as one whose value may change the
  // plan, and then re-prepares the statement at every call that binds it (~10-40 µs each,
  // several such reads a run). A parameter written `+?` is an expression the planner does not
  // look into: same result, the plan made once.
  it("write every parameter of a query with ORDER BY, LIMIT, min() or max() as +? so the statement is planned once", () => {
    const statements = preparedStatements();
    expect(statements.length).toBeGreaterThan(30);
    const ordered = statements.filter((sql) => /\b(ORDER BY|LIMIT|min\s*\(|max\s*\()/i.test(sql));
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
    const prepare = db.prepare.bind(db);
    const seen: string[] = [];
    db.prepare = ((sql: string) => {
      seen.push(sql);
      return prepare(sql);
    }) as typeof db.prepare;
    createSqliteStore(db);
    const orphaned = seen.find((sql) => /FROM run_inputs i/.test(sql));
    expect(orphaned).toBeDefined();
    const plan = (prepare(`EXPLAIN QUERY PLAN ${orphaned}`).all() as { detail: string }[]).map((r) => r.detail);
    expect(plan.filter((d) => /^SCAN (runs|r)\b/.test(d))).toEqual([]);
    expect(plan.join(" | ")).toMatch(/SEARCH r USING INDEX sqlite_autoindex_runs_1 \(id=\?\)/);
    db.close();
  });
});
