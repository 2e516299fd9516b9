import { join } from "node:path";
import Database from "better-sqlite3";
import { checkDatabase } from "./invariants.js";

const dir = process.argv[2] as string;
const db = new Database(join(dir, "agent.db"), { readonly: true });
const r = await checkDatabase(
  dir,
  { runs: [], decisions: new Map(), reasked: [], steered: [], waited: [], seen: new Map() },
  async (sql) => db.prepare(sql).all(),
);
console.log(r.summary);
console.log(r.problems.join("\n"));
