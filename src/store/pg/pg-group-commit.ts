import { GroupCommit } from "../group-commit.js";
import type { Statement } from "./pg-batch.js";

/** One run's batch, waiting for its group. */
export interface RunBatch {
  runId: string;
  statements: Statement[];
}

/**
 * The group commit of live runs' batches over PostgreSQL (see GroupCommit): the batches of a
 * group are one transaction, sent in one round trip by `write` (runBatch). Within a group the
 * batches go in run id order, so two groups lock the runs' rows (their fences) in the same order.
 */
export function pgGroupCommit({
  windowMs,
  write,
}: {
  windowMs: number;
  write: (statements: Statement[]) => Promise<unknown>;
}): GroupCommit<RunBatch> {
  return new GroupCommit<RunBatch>({
    windowMs,
    commitGroup: async (batches) => {
      const ordered = [...batches].sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
      await write(ordered.flatMap((batch) => batch.statements));
      return batches.map(() => undefined);
    },
    commitAlone: (batch) => write(batch.statements),
  });
}
