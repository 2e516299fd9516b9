import type { RunView } from "../domain/run.js";
import { notFound, shuttingDown } from "../errors.js";
import type { Store } from "../store/store.js";
import { abortable } from "./abortable.js";
import type { EventHub } from "./event-hub.js";
import { waitForRelayedEnd } from "./event-relay.js";
import type { LiveRun } from "./live-run.js";
import type { LiveRuns } from "./registry.js";

/**
 * Resolves with the run once it has finished (at once if it already has): a run executed here
 * when this process reports its end; one that is not, when its `run.finished` reaches the hub.
 * That is every unfinished run over a shared database (`waitElsewhere`: it ends on another
 * instance), also one executed here until another instance took it over (this process stopped
 * it unfinished, still accepting), and a queued one over any store (it ends wherever it
 * starts, here too), unless it comes to be executed here meanwhile (`registry`): then this
 * process reports its end, also one that cannot be stored (reported after `finishReportMs`,
 * never published). Throws not-found for an unknown run (also one deleted with its session
 * while waited for), and shutting-down for a run left unfinished for the restart (also when
 * shutdown begins while this waits for a run not executed here). With `gone`, the
 * wait ends when it aborts (the client waiting left), rejecting with its reason: nothing of the
 * wait is left (its subscription to the run's events goes), and the run goes on.
 */
export async function waitForRunEnd({
  runId,
  live,
  get,
  stopping,
  store,
  hub,
  waitElsewhere,
  registry,
  gone,
}: {
  runId: string;
  /** The run, when this process executes it. */
  live: LiveRun | undefined;
  /** The run as this process reports it (see RunManager.get). */
  get: (runId: string) => Promise<RunView | null>;
  /** Aborted when this process's shutdown begins. */
  stopping: AbortSignal;
  store: Store;
  hub: EventHub;
  /** Resolves once the run has ended elsewhere, or once `signal` aborts (this wait is over). */
  waitElsewhere?: (runId: string, signal: AbortSignal) => Promise<void>;
  /** The runs this process executes: a run waited for may come to be one of them (whenLive). */
  registry?: Pick<LiveRuns, "whenLive" | "isStarting">;
  /** Aborted when whoever waits no longer does (see clientGone). */
  gone?: AbortSignal;
}): Promise<RunView> {
  let view = live ? await abortable(Promise.race([live.ended, live.done]), gone) : await get(runId);
  if (!view) throw notFound("run", runId);
  // A queued run, or one a start here stored and has not registered yet, ends wherever it executes.
  const waitEnd =
    waitElsewhere ??
    (view.status === "queued" || registry?.isStarting(runId)
      ? (_: string, signal: AbortSignal) => waitForRelayedEnd({ store, hub, runId, signal })
      : null);
  if (view.status !== "finished" && !stopping.aborted && waitEnd) {
    // Ends what this wait subscribed to, once it is over however it ended.
    const over = new AbortController();
    let onStop = () => {};
    const stopped = new Promise<null>((resolve) => {
      onStop = () => resolve(null);
      stopping.addEventListener("abort", onStop, { once: true });
    });
    const here = registry?.whenLive(runId);
    let reported: RunView | null = null;
    try {
      const ended = Promise.race([
        waitEnd(runId, over.signal).then(() => null),
        stopped,
        ...(here ? [here.live.then((run) => Promise.race([run.ended, run.done]))] : []),
      ]);
      reported = await abortable(ended, gone);
    } finally {
      over.abort();
      stopping.removeEventListener("abort", onStop);
      here?.cancel();
    }
    view = reported ?? (await get(runId));
    if (!view) throw notFound("run", runId);
  }
  // Left unfinished for the restart: it has no end to report yet.
  if (stopping.aborted && view.status !== "finished") throw shuttingDown(runId);
  return view;
}
