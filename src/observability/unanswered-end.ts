import { isStorageError } from "../store/errors.js";
import type { RunChange, Store } from "../store/store.js";
import { outcomeOf } from "../store/write-outcome.js";

type Finish = Extract<RunChange, { kind: "finish" }>;

/**
 * Whether a write of run `runId` that got no answer (StorageError `outcomeUnknown`: its COMMIT
 * sent, the answer lost) stored the run's end it holds: read back, the run is finished at that
 * end's time (`finishedAt`). False when the read fails too. Null, and nothing is read, for any
 * other write: one that failed otherwise, or holds no end.
 */
export function endStoredAfterAll({
  store,
  runId,
  changes,
  err,
}: {
  store: Store;
  runId: string;
  changes: readonly RunChange[];
  err: unknown;
}): Promise<boolean> | null {
  if (!(isStorageError(err) && err.outcomeUnknown)) return null;
  const finish = changes.find((change): change is Finish => change.kind === "finish");
  if (!finish) return null;
  const stored = async () => {
    const run = await store.runs.get(runId);
    return run?.status === "finished" && run.finishedAt === finish.finishedAt;
  };
  return outcomeOf(err, stored).then((outcome) => outcome === "done");
}
