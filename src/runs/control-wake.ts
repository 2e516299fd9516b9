import type { Logger } from "pino";
import type { RunNotifications } from "../store/store.js";
import { startWakePoll } from "./wake-poll.js";

export interface ControlWakeDeps {
  notifications: RunNotifications;
  /** Acts on the stored requests of one run executing here, or (no id) of all of them. */
  apply: (runId?: string) => Promise<void>;
  logger: Logger;
  downPollMs?: number;
  safetyPollMs?: number;
}

/**
 * Wakes the runs executing here when another instance stored a request for them (a cancel, a
 * decision): at once on its notification, for every run after a reconnect, and by the poll
 * (see startWakePoll). Returns the function that stops it.
 */
export function startControlWake({ notifications, apply, logger, downPollMs, safetyPollMs }: ControlWakeDeps) {
  const act = (runId?: string) =>
    apply(runId).catch((err) => logger.warn({ err, runId }, "could not read the requests stored for a run"));
  const stops = [
    notifications.subscribe({ control: (runId) => void act(runId), resync: () => void act() }),
    startWakePoll({ notifications, poll: () => act(), downMs: downPollMs, safetyMs: safetyPollMs }),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}
