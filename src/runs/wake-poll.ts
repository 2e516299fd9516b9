import type { RunNotifications } from "../store/store.js";

export interface WakePollOptions {
  notifications: RunNotifications;
  /** Reads what notifications would have announced; its failures are the caller's to report. */
  poll: () => Promise<void>;
  /** Interval while the listening connection is down (default 1 s). */
  downMs?: number;
  /** Interval while it is up: a safety net for anything missed (default 10 s). */
  safetyMs?: number;
}

/**
 * The fallback of notifications: `poll` runs every `downMs` while they cannot arrive, and every
 * `safetyMs` anyway, one at a time. Returns the function that stops it.
 */
export function startWakePoll({ notifications, poll, downMs = 1000, safetyMs = 10_000 }: WakePollOptions): () => void {
  // On the monotonic clock: a step of the wall clock (NTP, a restored VM) moves no poll.
  let last = performance.now();
  let running = false;
  const timer = setInterval(
    () => {
      if (running || (notifications.connected && performance.now() - last < safetyMs)) return;
      running = true;
      last = performance.now();
      poll()
        .catch(() => {})
        .finally(() => {
          running = false;
        });
    },
    Math.min(downMs, safetyMs),
  );
  timer.unref();
  return () => clearInterval(timer);
}
