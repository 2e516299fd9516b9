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
  /** The writes may go on; `complete`: every frame is in the database file, so the next commit restarts the WAL. */
  | { kind: "release"; complete: boolean }
  | { kind: "closed" };

/**
 * The checkpoint worker, as source (run with `eval: true`, so it needs no file of its own in
 * dist/ or in the sources tests run from; written to run as a script or as a module, which an
 * eval'd worker becomes when module hooks are registered). On its own connection to the database it runs a
 * PASSIVE checkpoint every `intervalMs`: the WAL's frames are copied into the database file
 * and fsynced on this thread, never inside a commit of the server's thread. PASSIVE never
 * waits for the writer; a checkpoint it could not finish is completed by the next. Each
 * checkpoint that copied frames (or found new ones) is reported.
 *
 * SQLite writes the WAL from its beginning again only once every frame is in the database
 * file, and under writes that never pause (commits every few milliseconds) new frames always
 * arrive during a checkpoint, so the WAL would grow for as long as the load lasts. When the
 * WAL holds `restartFrames` frames or more, the worker catches up (checkpoints again while
 * many frames arrived during the last one), then, if frames are left to copy, asks the
 * server's thread to hold its writes ("hold"; the writes wait in their group, the event loop
 * goes on), copies the last frames with their fsyncs, and lets the writes go on ("release"):
 * the next commit restarts the WAL. A restart that did not complete (the disk is slower than
 * the writes, or the hold ended first) is not tried again for a number of intervals that
 * doubles each time (at most 32), so a slow disk does not get its writes held at every tick.
 */
export const CHECKPOINT_WORKER_SOURCE = `
const { parentPort, workerData } = process.getBuiltinModule("node:worker_threads");
const { createRequire } = process.getBuiltinModule("node:module");
const Database = createRequire(workerData.driver)(workerData.driver);
const db = new Database(workerData.path, { timeout: 0, fileMustExist: true });
const restartFrames = workerData.restartFrames;
/** When the hold of a restart was asked for (null: none under way); a hold never answered is given up after 5 s. */
let holdAskedAt = null;
/** Ticks left before a restart is tried again, and how many the next failure waits. */
let backoff = 0;
let nextBackoff = 1;
let last = { log: 0, checkpointed: 0 };
function checkpoint() {
  const started = performance.now();
  try {
    const [result] = db.pragma("wal_checkpoint(PASSIVE)");
    if (result.log > 0 && (result.log !== last.log || result.checkpointed !== last.checkpointed)) {
      parentPort.postMessage({
        kind: "checkpoint",
        durationMs: performance.now() - started,
        walFrames: result.log,
        checkpointed: result.checkpointed,
        busy: result.busy !== 0,
      });
    }
    last = result;
    return result;
  } catch (err) {
    parentPort.postMessage({ kind: "error", message: String(err && err.message) });
    return null;
  }
}
function tick() {
  if (holdAskedAt !== null && performance.now() - holdAskedAt < 5000) return;
  holdAskedAt = null;
  let result = checkpoint();
  if (!result || result.log < restartFrames) return;
  if (backoff > 0) {
    backoff--;
    return;
  }
  // Catch up while many frames arrived since the last copy began: the hold then covers few.
  // (A checkpoint's \`log\` is the WAL as it found it; frames added since are not counted.)
  for (let i = 0; i < 8; i++) {
    const before = result.log;
    result = checkpoint();
    if (!result) return;
    const arrived = result.log - before;
    // Nothing new, every frame copied: the next commit restarts the WAL without a hold.
    if (arrived === 0 && result.checkpointed >= result.log) return;
    if (arrived <= restartFrames / 64) break;
  }
  holdAskedAt = performance.now();
  parentPort.postMessage({ kind: "hold" });
}
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message === "checkpoint") checkpoint();
  if (message === "held") {
    const result = checkpoint();
    holdAskedAt = null;
    const complete = !!result && result.checkpointed >= result.log;
    if (complete) nextBackoff = 1;
    else {
      backoff = nextBackoff;
      nextBackoff = Math.min(32, nextBackoff * 2);
    }
    parentPort.postMessage({ kind: "release", complete });
  }
  if (message === "close") {
    clearInterval(timer);
    db.close();
    parentPort.postMessage({ kind: "closed" });
    parentPort.close();
  }
});
`;
