import type { Store } from "../store/store.js";

/** How long readiness waits for the store's write probe (a healthy one takes milliseconds). */
export const PROBE_DEADLINE_MS = 2_000;

const inFlight = new WeakMap<Store, Promise<void>>();

/**
 * The store's write probe as readiness runs it. It settles within `deadlineMs`: a probe not
 * answered by then is reported failed ("did not answer within ...") while it goes on, so
 * /readyz answers 503 promptly when the database hangs instead of hanging with it. One probe
 * per store at a time: a readiness check made while one is on its way waits for that one
 * (checks arriving every second against a database that hangs do not pile up writes).
 */
export async function boundedProbe(store: Store, deadlineMs = PROBE_DEADLINE_MS): Promise<void> {
  let probe = inFlight.get(store);
  if (!probe) {
    probe = store.probeWrites().finally(() => inFlight.delete(store));
    inFlight.set(store, probe);
  }
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the write probe did not answer within ${deadlineMs / 1000} s`)),
      deadlineMs,
    );
  });
  try {
    await Promise.race([probe, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
