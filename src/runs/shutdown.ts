import type { LiveRuns } from "./registry.js";

/** After the grace period, how long runs stopped then get to unwind before the server closes. */
const LATE_STOP_MS = 1000;

/** Waits for the promises to settle, at most `ms`. */
async function settledWithin(promises: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * Stops the live runs within `graceMs` (the caller has stopped accepting new ones). With
 * `resume` (ON_RESTART=resume) each run is suspended: left as its last commit has it, for the
 * next start to resume (a pending approval is still pending then). Otherwise each is
 * cancelled and ends `aborted`. A run already being cancelled is cancelled either way.
 */
export async function stopLiveRuns(registry: LiveRuns, { graceMs, resume }: { graceMs: number; resume: boolean }) {
  const done = registry.values().map((live) => {
    if (resume && !live.cancelRequested) live.suspend();
    else live.cancel("because the server shut down");
    return live.done;
  });
  await settledWithin(done, graceMs);
  // A tool that outlasted the grace period is stopped now (its process group is signalled)
  // and left for the restart, which records it as interrupted.
  const late = registry.values().filter((live) => live.phase.name === "suspending");
  for (const live of late) live.stop();
  if (late.length)
    await settledWithin(
      late.map((live) => live.done),
      LATE_STOP_MS,
    );
}
