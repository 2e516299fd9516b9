import { Worker } from "node:worker_threads";
import { errnoCode, isOutOfDescriptors } from "../errno.js";
import { SEARCH_WORKER_SOURCE, type SearchWorkerData, type SearchWorkerResult } from "./search-worker-source.js";

export type SearchRun =
  | { kind: "done"; result: SearchWorkerResult }
  | { kind: "timeout" }
  | { kind: "aborted" }
  /** The worker thread could not start: the process (EMFILE) or the system (ENFILE) has no file descriptor left. */
  | { kind: "out_of_descriptors"; code: "EMFILE" | "ENFILE" }
  /** The worker failed otherwise: an exception it did not catch (a bug), out of memory, or an early exit. */
  | { kind: "failed"; error: unknown };

/** Heap limit of a search worker: a runaway search fails on its own instead of bloating the server. */
const WORKER_HEAP_MB = 256;

/**
 * Runs one search in a fresh worker thread. Resolves "timeout" once `timeLimitMs` has passed
 * and "aborted" when `signal` fires; in both cases the worker is terminated (which stops even
 * a regex that would backtrack for ever) before the promise resolves. Resolves
 * "out_of_descriptors" when the worker cannot start for lack of file descriptors (its event
 * loop needs some). Resolves "failed" if the worker itself fails otherwise (a bug, or out of
 * memory); it never rejects.
 */
export function runSearchWorker({
  data,
  timeLimitMs,
  signal,
}: {
  data: SearchWorkerData;
  timeLimitMs: number;
  signal: AbortSignal;
}): Promise<SearchRun> {
  if (signal.aborted) return Promise.resolve({ kind: "aborted" });
  return new Promise((resolve) => {
    const worker = new Worker(SEARCH_WORKER_SOURCE, {
      eval: true,
      workerData: data,
      // The directories and file the worker holds open are closed when it is terminated.
      trackUnmanagedFds: true,
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    });
    let settled = false;
    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      const stopped = () => {
        //closeLeftDescriptors(fdSlots);
        finish();
      };
      void worker.terminate().then(stopped, stopped);
    };
    const onAbort = (): void => settle(() => resolve({ kind: "aborted" }));
    const timer = setTimeout(() => settle(() => resolve({ kind: "timeout" })), timeLimitMs);
    signal.addEventListener("abort", onAbort, { once: true });
    worker.once("message", (result: SearchWorkerResult) => settle(() => resolve({ kind: "done", result })));
    worker.once("error", (err) => {
      const code = initFailure(err);
      settle(() =>
        resolve(isOutOfDescriptors(code) ? { kind: "out_of_descriptors", code } : { kind: "failed", error: err }),
      );
    });
    worker.once("exit", (code) =>
      settle(() => resolve({ kind: "failed", error: new Error(`search worker exited early with code ${code}`) })),
    );
  });
}

/**
 * Why a worker could not start: Node reports ERR_WORKER_INIT_FAILED with the system error's
 * name only in the message ("Worker initialization failure: EMFILE"). Undefined for any
 * other error.
 */
function initFailure(err: unknown): string | undefined {
  if (errnoCode(err) !== "ERR_WORKER_INIT_FAILED" || !(err instanceof Error)) return undefined;
  return /: (E[A-Z]+)$/.exec(err.message)?.[1];
}
