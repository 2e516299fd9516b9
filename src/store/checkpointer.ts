import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import {
  CHECKPOINT_WORKER_SOURCE,
  type CheckpointReport,
  type CheckpointWorkerData,
} from "./checkpoint-worker-source.js";

/** How often the WAL is checkpointed by default. */
export const CHECKPOINT_INTERVAL_MS = 1000;

/** The WAL's size, in frames (pages), from which it is restarted by default: 64 MiB of 4 KiB pages. */
export const WAL_RESTART_FRAMES = 16_384;

/** The longest the server's writes are held for a WAL restart, should the worker not answer. */
const LONGEST_HOLD_MS = 1000;

export interface CheckpointerOptions {
  path: string;
  intervalMs?: number;
  /** Told of each checkpoint that found frames to copy, with how long it took (ms). */
  onCheckpoint?: (durationMs: number) => void;
  /** Told when a checkpoint failed (a full disk, say); the next one tries again. */
  onError?: (message: string) => void;
  /** Told when the worker stopped without being closed: no checkpoint runs from then on. */
  onLost?: () => void;
  /** A WAL of this many frames or more is restarted from its beginning (WAL_RESTART_FRAMES by default). */
  restartFrames?: number;
  /**
   * Holds the server's writes for a WAL restart: from its call until the returned release, no
   * write transaction starts on the server's connection (writes wait; nothing blocks).
   */
  holdWrites?: () => () => void;
  /**
   * Told when the writes held for a restart go on: how long they were held (ms), and whether
   * every frame was copied by then (the next commit restarts the WAL).
   */
  onRestart?: (fact: WalRestart) => void;
}

/** One hold of the server's writes for a WAL restart, once it ended. */
export interface WalRestart {
  heldMs: number;
  complete: boolean;
}

/**
 * WAL checkpoints off the server's thread: a worker with its own connection to the database
 * (see CHECKPOINT_WORKER_SOURCE), so the copy into the database file and its fsync never
 * stall a commit or the event loop. The server's connection has its automatic checkpoint
 * off; at close the last connection checkpoints what is left.
 */
export class Checkpointer {
  readonly #worker: Worker;
  #closed: Promise<void> | null = null;
  /** Settles when the worker is gone (closed, or ended by an error). */
  readonly #exited: Promise<void>;

  constructor({
    path,
    intervalMs = CHECKPOINT_INTERVAL_MS,
    onCheckpoint,
    onError,
    onLost,
    restartFrames = WAL_RESTART_FRAMES,
    holdWrites,
    onRestart,
  }: CheckpointerOptions) {
    if (!Number.isInteger(restartFrames) || restartFrames < 1) {
      throw new RangeError(`restartFrames must be a positive integer, not ${restartFrames}`);
    }
    const data: CheckpointWorkerData = {
      path,
      driver: createRequire(import.meta.url).resolve("better-sqlite3"),
      intervalMs,
      restartFrames,
    };
    this.#worker = new Worker(CHECKPOINT_WORKER_SOURCE, { eval: true, workerData: data });
    // The worker alone never keeps the process alive.
    this.#worker.unref();
    /** The hold of a restart under way: its release, when it began, and the timer that ends it should the worker not. */
    let hold: { release: () => void; since: number; late: NodeJS.Timeout } | null = null;
    const endHold = (complete: boolean) => {
      if (hold === null) return;
      clearTimeout(hold.late);
      hold.release();
      onRestart?.({ heldMs: performance.now() - hold.since, complete });
      hold = null;
    };
    this.#worker.on("message", (report: CheckpointReport) => {
      if (report.kind === "checkpoint") onCheckpoint?.(report.durationMs);
      else if (report.kind === "error") onError?.(report.message);
      else if (report.kind === "hold") {
        endHold(false);
        // Answered at once: the server's connection has no transaction open between two turns.
        hold = {
          release: holdWrites?.() ?? (() => {}),
          since: performance.now(),
          // Held writes keep the process up until they go on (at most this long).
          late: setTimeout(() => {
            endHold(false);
            onError?.(`a WAL restart held the writes ${LONGEST_HOLD_MS} ms without the worker's answer; they go on`);
          }, LONGEST_HOLD_MS),
        };
        this.#worker.postMessage("held");
      } else if (report.kind === "release") endHold(report.complete);
    });
    this.#worker.on("error", (err) => onError?.(err.message));
    this.#exited = new Promise((resolve) =>
      this.#worker.once("exit", () => {
        endHold(false);
        if (!this.#closed) onLost?.();
        resolve();
      }),
    );
  }

  /** Asks for a checkpoint now (it runs on the worker, after the one in progress if any). */
  checkpointNow(): void {
    this.#worker.postMessage("checkpoint");
  }

  /** Closes the worker's connection and stops it; resolves once it is gone. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      // Held until it is gone: a close is awaited even when nothing else keeps the process up.
      this.#worker.ref();
      this.#worker.postMessage("close");
      // A worker that does not close in time is stopped.
      const late = setTimeout(() => void this.#worker.terminate().catch(() => {}), 2000);
      await this.#exited;
      clearTimeout(late);
    })();
    return this.#closed;
  }
}
