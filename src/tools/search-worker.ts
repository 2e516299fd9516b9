import { Worker } from "node:worker_threads";
import { SEARCH_WORKER_SOURCE, type SearchWorkerData, type SearchWorkerResult } from "./search-worker-source.js";

export type SearchRun = { kind: "done"; result: SearchWorkerResult } | { kind: "timeout" } | { kind: "aborted" };

/** Heap limit of a search worker: a runaway search fails on its own instead of bloating the server. */
const WORKER_HEAP_MB = 256;

/**
 * Runs one search in a fresh worker thread. Resolves "timeout" once `timeLimitMs` has passed
 * and "aborted" when `signal` fires; in both cases the worker is terminated (which stops even
 * a regex that would backtrack for ever) before the promise resolves. Rejects if the worker
 * itself fails (a bug, or out of memory).
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
  return new Promise((resolve, reject) => {
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
    worker.once("error", (err) => settle(() => reject(err)));
    worker.once("exit", (code) => settle(() => reject(new Error(`search worker exited early with code ${code}`))));
  });
}
