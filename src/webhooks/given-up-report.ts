import type { Logger } from "pino";

/** Deliveries given up at the pending cap are logged at most this often. */
export const GIVEN_UP_REPORT_MS = 60_000;

/**
 * Logs the deliveries given up at WEBHOOK_MAX_PENDING_PER_KEY (see pending-cap.ts), with
 * their count by owner, at most once per `everyMs`: the first at once, those after it together
 * once `everyMs` has passed since. A key flooding a dead receiver makes one line a minute, not
 * one per delivery.
 */
export class GivenUpReport {
  readonly #counts = new Map<string | null, number>();
  #loggedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: { logger: Logger; cap: number; everyMs?: number; now?: () => number }) {}

  /** Adds `counts` (by owner) and logs what has been added when a log is due. */
  report(counts: ReadonlyMap<string | null, number>): void {
    for (const [owner, count] of counts) this.#counts.set(owner, (this.#counts.get(owner) ?? 0) + count);
    const now = (this.deps.now ?? Date.now)();
    if (!this.#counts.size || now - this.#loggedAt < (this.deps.everyMs ?? GIVEN_UP_REPORT_MS)) return;
    const owners = [...this.#counts].map(([owner, count]) => ({ owner, count }));
    this.deps.logger.warn(
      {
        givenUp: owners.reduce((sum, { count }) => sum + count, 0),
        owners,
        maxPendingPerKey: this.deps.cap,
      },
      "webhook deliveries given up: their keys had WEBHOOK_MAX_PENDING_PER_KEY older ones pending",
    );
    this.#counts.clear();
    this.#loggedAt = now;
  }
}
