/** What the checkpoint worker is started with. */
export interface CheckpointWorkerData {
  /** The database file. */
  path: string;
  /** The better-sqlite3 module to load (resolved by the caller: an eval'd worker has no module path of its own). */
  driver: string;
  intervalMs: number;
  /** A WAL of this many frames or more is restarted from its beginning (see CHECKPOINT_WORKER_SOURCE). */
  restartFrames: number;
}

/** One checkpoint as the worker reports it, or its failure, or a step of a restart. */
export type CheckpointReport =
  | { kind: "checkpoint"; durationMs: number; walFrames: number; checkpointed: number; busy: boolean }
  | { kind: "error"; message: string }
  /** The worker asks the server's thread to hold its writes, and to answer "held" once none can start. */
  | { kind: "hold" }
  /** The writes may go on (the next commit restarts the WAL if every frame is in the database file). */
  | { kind: "release" }
  | { kind: "closed" };

/**
 * The checkpoint worker, as source (run with `eval: true`, so it needs no file of its own in
 * dist/ or in the sources tests run from; written to run as a script or as a module, which an
 * eval'd worker becomes when module hooks are registered). On its own connection to the database it runs a
 * PASSIVE checkpoint every `intervalMs`: the WAL's frames are copied into the database file
 * and fsynced on this thread, never inside a commit of the server's thread. PASSIVE never
 * waits for the writer; a checkpoint it could not finish is completed by the next.
 *
 * SQLite writes the WAL from its beginning again only once every frame is in the database
 * file, and under writes that never pause (commits every few milliseconds) new frames always
 * arrive during a checkpoint, so the WAL would grow for as long as the load lasts. When the
 * WAL holds `restartFrames` frames or more after a checkpoint, the worker catches up once
 * more, then asks the server's thread to hold its writes ("hold"; the writes wait in their
 * group, the event loop goes on), copies the few frames written since, and lets the writes go
 * on ("release"): the next commit restarts the WAL from its beginning.
 */
export const CHECKPOINT_WORKER_SOURCE = `
const { parentPort, workerData } = process.getBuiltinModule("node:worker_threads");
const { createRequire } = process.getBuiltinModule("node:module");
const Database = createRequire(workerData.driver)(workerData.driver);
const db = new Database(workerData.path, { timeout: 0, fileMustExist: true });
let restarting = false;
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
    return result;
  } catch (err) {
    parentPort.postMessage({ kind: "error", message: String(err && err.message) });
    return null;
  }
}
function tick() {
  if (restarting) return;
  const result = checkpoint();
  if (result && result.log >= workerData.restartFrames && checkpoint()) {
    restarting = true;
    parentPort.postMessage({ kind: "hold" });
  }
}
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message === "checkpoint") checkpoint();
  if (message === "held") {
    checkpoint();
    restarting = false;
    parentPort.postMessage({ kind: "release" });
  }
  if (message === "close") {
    clearInterval(timer);
    db.close();
    parentPort.postMessage({ kind: "closed" });
    parentPort.close();
  }
});
`;
