import { join } from "node:path";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import { FaultyStore } from "../fakes/faulty-store.js";
import { tempDir } from "./temp-dir.js";

/**
 * A SQLite store on a temp file and a FaultyStore over it (`store` is the faulty one); closed
 * and removed by the cleanup pushed onto `cleanups`.
 */
export function faultySqlite(prefix: string, cleanups: (() => void | Promise<void>)[]) {
  const dir = tempDir(prefix);
  const sqlite = openSqliteStore({ path: join(dir.path, "agent.db") });
  cleanups.push(async () => {
    await sqlite.close();
    dir.cleanup();
  });
  const faulty = new FaultyStore(sqlite);
  return { sqlite, faulty, store: faulty.store };
}
