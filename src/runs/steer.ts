import type { RunView } from "../domain/run.js";
import { notFound } from "../errors.js";
import { newId } from "../ids.js";
import type { Store } from "../store/store.js";
import type { EventHub } from "./event-hub.js";

/** How often a steer looks at the store between the run's events (a run executed elsewhere sends none here). */
const POLL_MS = 250;

export interface SteerDeps {
  store: Store;
  hub: EventHub;
  accepting: () => boolean;
  /** The run as clients see it now. */
  get: (runId: string) => Promise<RunView | null>;
}

/**
 * Where steered input went: `taken` by the active run (committed as a user message before its
 * next model request, or, during a shutdown, left stored for the restart);
 * `ended`: the run ended before taking it (the caller starts a new run with it; `inputId`: the
 * stored input, still pending, which that run's insert removes); `idle`: the session has no
 * active run, or one that takes no input any more.
 */
export type SteerOutcome = { to: "taken"; run: RunView } | { to: "ended"; inputId?: string } | { to: "idle" };

/**
 * Joins `input` to the session's active run: stored (in the database, so whichever process
 * executes the run takes it, also after a restart) until the run takes it at its next model
 * request, which commits it as a user message; resolves once that happened, or once the run
 * ended without it.
 */
export async function steerActive(
  deps: SteerDeps,
  { sessionId, input }: { sessionId: string; input: string },
): Promise<SteerOutcome> {
  const active = await deps.store.runs.active(sessionId);
  if (!active) return { to: "idle" };
  const id = newId("msg");
  let wake: () => void = () => {};
  // Subscribed before the input is stored: no message or end of the run goes unseen.
  const unsubscribe = deps.hub.subscribe(active.id, (event) => {
    if (event.type === "message" || event.type === "run.finished") wake();
  });
  try {
    const added = await deps.store.inputs.add({
      id,
      runId: active.id,
      content: input,
      createdAt: new Date().toISOString(),
    });
    // Ending already (cancelling): it takes no input.
    if (!added) return { to: "idle" };
    while (true) {
      const pending = (await deps.store.inputs.pending(active.id)).some((i) => i.id === id);
      if (!pending) return { to: "taken", run: await viewOf(deps, active.id) };
      // Shutting down: the input stays stored for the restart, which gives it to the run, or
      // queues it as a new run if the run has ended.
      if (!deps.accepting()) return { to: "taken", run: await viewOf(deps, active.id) };
      const run = await deps.store.runs.get(active.id);
      if (!run) throw notFound("run", active.id);
      if (run.status === "finished") return { to: "ended", inputId: id };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    unsubscribe();
  }
}

async function viewOf(deps: SteerDeps, runId: string): Promise<RunView> {
  const view = await deps.get(runId);
  if (!view) throw notFound("run", runId);
  return view;
}
