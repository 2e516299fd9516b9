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
