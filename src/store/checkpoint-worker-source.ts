/** What the checkpoint worker is started with. */
export interface CheckpointWorkerData {
  /** The database file. */
  path: string;
  /** The better-sqlite3 module to load (resolved by the caller: an eval'd worker has no module path of its own). */
  driver: string;
  intervalMs: number;
}

/** One checkpoint as the worker reports it, or its failure. */
export type CheckpointReport =
  | { kind: "checkpoint"; durationMs: number; walFrames: number; checkpointed: number; busy: boolean }
  | { kind: "error"; message: string }
  | { kind: "closed" };

/**
 * The checkpoint worker, as source (run with `eval: true`, so it needs no file of its own in
 * dist/ or in the sources tests run from; written to run as a script or as a module, which an
 * eval'd worker becomes when module hooks are registered). On its own connection to the database it runs a
 * PASSIVE checkpoint every `intervalMs`: the WAL's frames are copied into the database file
 * and fsynced on this thread, never inside a commit of the server's thread. PASSIVE never
 * waits for the writer; a checkpoint it could not finish is completed by the next.
 */
export const CHECKPOINT_WORKER_SOURCE = `
const { parentPort, workerData } = process.getBuiltinModule("node:worker_threads");
const { createRequire } = process.getBuiltinModule("node:module");
const Database = createRequire(workerData.driver)(workerData.driver);
const db = new Database(workerData.path, { timeout: 0, fileMustExist: true });
function checkpoint() {
  const started = performance.now();
  try {
    const [result] = db.pragma("wal_checkpoint(PASSIVE)");
    if (result.log > 0) {
      parentPort.postMessage({
        kind: "checkpoint",
        durationMs: performance.now() - started,
        walFrames: result.log,
        checkpointed: result.checkpointed,
        busy: result.busy !== 0,
      });
    }
  } catch (err) {
    parentPort.postMessage({ kind: "error", message: String(err && err.message) });
  }
}
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message === "checkpoint") checkpoint();
  if (message === "close") {
    clearInterval(timer);
    db.close();
    parentPort.postMessage({ kind: "closed" });
    parentPort.close();
  }
});
`;
