// The webhook worker's pool of sends (see WebhookWorker) and what it reports.

/** At most this many sends at once, in all. */
export const WEBHOOK_SLOTS = 16;
/**
 * At most this many sends at once per owner, once its receiver has answered 2xx often enough
 * (see SendShares): half the slots stay for the others (a lone owner, as a keyless server's,
 * sends 8 at once).
 */
export const WEBHOOK_SLOTS_PER_OWNER = 8;
/**
 * The owners whose last try failed hold at most this many slots together, one each at most:
 * however many keys aim at receivers that never answer, the other half of the slots stays for
 * keys whose receivers answer (or have not been tried yet).
 */
export const FAILING_SLOTS = 8;
/**
 * A send unanswered this long (or a quarter of WEBHOOK_TIMEOUT_MS when that is less) is stuck:
 * it leaves the WEBHOOK_SLOTS for one of the STUCK_SLOTS, and its owner claims no more until it
 * ends. Whatever receivers did before, the slots held by sends that hang free within it.
 */
export const STUCK_MS = 1000;
/**
 * At most this many stuck sends are out of WEBHOOK_SLOTS at once; more stuck ones stay in them
 * (each still ends at WEBHOOK_TIMEOUT_MS).
 */
export const STUCK_SLOTS = 32;

/** The stuck threshold under `timeoutMs`. */
export const stuckAfterMs = (timeoutMs: number): number => Math.min(STUCK_MS, Math.floor(timeoutMs / 4));

/** How long the tries under way may go on once the worker stops (the server shutting down). */
export const STOP_GRACE_MS = 1000;

/**
 * After a failing receiver's step ends, an owner's other deliveries to it wait for the failed
 * one's next try this long (plus two polls) at most: no longer if that one is not tried here
 * again (sent by another instance, its window over, deleted). See CoolingTargets.
 */
export const COOLING_GRACE_MS = 1000;

/** What the worker tells the metrics: how each try ended, and why deliveries were given up. */
export interface WebhookFacts {
  webhookTry(outcome: "delivered" | "failed" | "refused" | "cut"): void;
  webhookGivenUp(reason: "window" | "gone" | "refused" | "cap", count: number): void;
}
