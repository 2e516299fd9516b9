#!/usr/bin/env node
// `npm run bench:sqlite-locking`: what SQLite's locking mode costs the statements a run makes,
// better-sqlite3 alone, on a WAL file with the pragmas of src/store/database.ts. In normal
// locking (our server's: its checkpoints run on a connection of their own, off the event loop)
// every transaction, a lone read included, takes and drops a lock on the WAL index with system
// calls; in exclusive locking (the stack fixture's default, see bench/stack-floor-server.mjs)
// one connection holds the file alone and locks nothing per transaction. Measures the CPU a
// statement costs in each mode, the two in turn, in one process: a point read (a session by
// its id), a read of 10 rows (a session's history) and a transaction of two inserts and an
// update (a commit of a run's events). A benchmark, not a test: prints figures.
//
// Env: BENCH_OPS (100000 of each statement a measurement), BENCH_ROUNDS (3).
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { envInt, fmt, machineLine, median, root } from "./harness.mjs";

const Database = createRequire(join(root, "package.json"))("better-sqlite3");
const OPS = envInt("BENCH_OPS", 100_000);
const ROUNDS = Math.max(1, envInt("BENCH_ROUNDS", 3));
const dir = mkdtempSync(join(tmpdir(), "bench-sqlite-locking-"));

/** A database in `mode` with the product's pragmas and 10,000 sessions of 10 messages. */
function open(mode, name) {
  const db = new Database(join(dir, `${name}.db`));
  db.pragma(`locking_mode = ${mode}`);
  for (const pragma of ["journal_mode = WAL", "synchronous = NORMAL", "cache_size = -8192", "temp_store = MEMORY"])
    db.pragma(pragma);
  db.exec(`CREATE TABLE sessions (id TEXT PRIMARY KEY, system TEXT);
    CREATE TABLE messages (session_id TEXT, seq INTEGER, content TEXT, PRIMARY KEY (session_id, seq));
    CREATE TABLE events (run_id TEXT, seq INTEGER, data TEXT, PRIMARY KEY (run_id, seq))`);
  const session = db.prepare("INSERT INTO sessions VALUES (?, ?)");
  const message = db.prepare("INSERT INTO messages VALUES (?, ?, ?)");
  db.transaction(() => {
    for (let s = 0; s < 10_000; s++) {
      session.run(`s${s}`, "x".repeat(200));
      for (let m = 1; m <= 10; m++) message.run(`s${s}`, m, "y".repeat(100));
    }
  })();
  return db;
}

/** CPU µs (all threads of this process) a call of `fn` costs, over OPS calls. */
function cpuPerOp(fn) {
  for (let i = 0; i < OPS / 10; i++) fn(i);
  const before = process.cpuUsage();
  for (let i = 0; i < OPS; i++) fn(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / OPS;
}

function measure(mode, round) {
  const db = open(mode, `${mode}-${round}`);
  const get = db.prepare("SELECT * FROM sessions WHERE id = ?");
  const history = db.prepare("SELECT * FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq");
  const event = db.prepare("INSERT INTO events VALUES (?, ?, ?)");
  const touch = db.prepare("UPDATE sessions SET system = ? WHERE id = ?");
  let seq = 0;
  const commit = db.transaction((i) => {
    event.run(`r${round}`, ++seq, "z".repeat(100));
    event.run(`r${round}`, ++seq, "z".repeat(100));
    touch.run("x".repeat(200), `s${i % 10_000}`);
  });
  const figures = {
    read: cpuPerOp((i) => get.get(`s${i % 10_000}`)),
    history: cpuPerOp((i) => history.all(`s${i % 10_000}`, 0)),
    commit: cpuPerOp((i) => commit(i)),
  };
  db.close();
  return figures;
}

console.log(`bench:sqlite-locking: ${OPS} of each statement a measurement, ${ROUNDS} rounds, modes in turn`);
console.log(`  ${machineLine()}`);
const results = { NORMAL: [], EXCLUSIVE: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? ["NORMAL", "EXCLUSIVE"] : ["EXCLUSIVE", "NORMAL"]) {
      const figures = measure(mode, round);
      results[mode].push(figures);
      console.log(
        `  round ${round + 1} ${mode.toLowerCase().padEnd(9)} CPU µs: point read ${fmt(figures.read, 2)}, 10-row read ${fmt(figures.history, 2)}, commit ${fmt(figures.commit, 2)}`,
      );
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const med = (mode, key) => median(results[mode].map((f) => f[key]));
const line = ["read", "history", "commit"]
  .map((key) => `${key} ${fmt(med("NORMAL", key), 2)} / ${fmt(med("EXCLUSIVE", key), 2)} µs`)
  .join(", ");
console.log(`summary (medians of ${ROUNDS}, normal / exclusive locking, CPU a statement): ${line}`);
