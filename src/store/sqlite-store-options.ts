import type { WalRestart } from "./checkpointer.js";
import type { OpenDatabaseOptions } from "./database.js";

/** How the store over an open SQLite connection works (createSqliteStore). */
export interface SqliteStoreOptions {
  /** GroupCommit's window for writes; GROUP_COMMIT_WINDOW_MS by default. */
  groupCommitMs?: number;
  /** At most this many events are deleted in one piece of a session's delete; 2,000 by default. */
  deletePieceRows?: number;
}

/** The file openSqliteStore opens, and what it tells of the file's upkeep. */
export interface OpenSqliteStoreOptions extends OpenDatabaseOptions, SqliteStoreOptions {
  /** Told of each WAL checkpoint with its duration in ms (see Checkpointer). */
  onCheckpoint?: (durationMs: number) => void;
  /** Told when a checkpoint failed. */
  onCheckpointError?: (message: string) => void;
  /** How often the WAL is checkpointed (CHECKPOINT_INTERVAL_MS by default). */
  checkpointIntervalMs?: number;
  /** The WAL's size in frames from which it is restarted (WAL_RESTART_FRAMES by default). */
  walRestartFrames?: number;
  /** Told when the writes held for a WAL restart go on (see Checkpointer). */
  onWalRestart?: (fact: WalRestart) => void;
  /** Told once, when `fileProblem` first finds one (see fileProblemOf). */
  onFileProblem?: (problem: string) => void;
}
