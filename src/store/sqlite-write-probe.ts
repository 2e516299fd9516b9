import type { Db } from "./database.js";

const ROLLBACK = Symbol("rollback");

/**
 * The work of the SQLite store's `probeWrites`, to run inside a write's transaction: it
 * stamps the heartbeat row and allocates new pages in a savepoint rolled back at once, so a
 * full disk fails here (StorageError once translated) and nothing of it is kept.
 */
export function sqliteWriteProbe(db: Db): () => void {
  const heartbeat = db.prepare("INSERT OR REPLACE INTO server_heartbeat (id, at) VALUES (1, ?)");
  const growth = db.prepare("INSERT INTO server_probe (data) VALUES (zeroblob(16384))");
  const grow = db.transaction(() => {
    growth.run();
    throw ROLLBACK;
  });
  return () => {
    heartbeat.run(new Date().toISOString());
    try {
      grow();
    } catch (err) {
      if (err !== ROLLBACK) throw err;
    }
  };
}
