import { Deadline } from "../deadline.js";
import type { LiveRun } from "./live-run.js";
import type { LiveRuns } from "./registry.js";

/** After the grace period, how long runs stopped then get to unwind (at most) before the server closes. */
const LATE_STOP_MS = 1000;

/**
 * Stops a live run for a shutdown: with `resume` (ON_RESTART=resume) it is suspended, left as
 * its last commit has it for the next start to resume (a pending approval is still pending
 * then); otherwise it is cancelled and ends `aborted`. A run already being cancelled is
 * cancelled either way.
 */
export function stopForShutdown(live: LiveRun, { resume }: { resume: boolean }): void {
  if (resume && !live.cancelRequested) live.suspend();
  else live.cancel("because the server shut down");
}

/**
 * Stops the live runs within `graceMs` (see stopForShutdown). The caller has stopped accepting
 * new ones and stops a run registered from then on likewise (a start admitted before): those
 * are waited for too, within the same grace. The runs still executing a tool after it are
 * stopped then and get LATE_STOP_MS to unwind, and no later than `closeBy`: the deadline the
 * shutdown's stages after the grace period share (Deadline.NONE: no other bound).
 */
export async function stopLiveRuns(
  registry: LiveRuns,
  { graceMs, resume, closeBy = Deadline.NONE }: { graceMs: number; resume: boolean; closeBy?: Deadline },
) {
  for (const live of registry.values()) stopForShutdown(live, { resume });
  const grace = Deadline.in(graceMs);
  for (let live = registry.values(); live.length > 0 && grace.left() > 0; live = registry.values())
    await grace.wait(Promise.allSettled(live.map((run) => run.done)));
  // A tool that outlasted the grace period is stopped now (its process group is signalled)
  // and left for the restart, which records it as interrupted.
  const late = registry.values().filter((live) => live.phase.name === "suspending");
  for (const live of late) live.leave();
  if (late.length) await closeBy.wait(Promise.allSettled(late.map((live) => live.done)), LATE_STOP_MS);
}
