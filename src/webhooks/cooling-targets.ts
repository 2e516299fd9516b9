/** Past this many (owner, receiver) pairs remembered, the ones whose wait is over are forgotten at the next failure. */
const PRUNE_AT = 10_000;

/** The table's key for a pair: unambiguous whatever either holds. */
const pairKey = (owner: string | null, url: string): string => JSON.stringify([owner, url]);

/** A pair's wait: until when, and the delivery whose failed try set it (tried first when it ends). */
interface Wait {
  until: number;
  leader: string;
}

/**
 * Receivers whose last try failed, each by the owner (API key) whose delivery it failed and
 * its URL, until that delivery's next try: the owner's other deliveries to it wait until then
 * too, so a receiver that fails gets one try per step of the backoff (or of its Retry-After)
 * from each owner, not the whole backlog each time a step ends. Only that owner waits: a key
 * whose deliveries a receiver refuses (another key's receiver, which verifies with its own
 * secret) holds back none of the deliveries of the keys it accepts. A 2xx ends the owner's
 * wait. This process's own view: another instance learns from its own tries. Bounded as when
 * it was keyed by URL alone: past PRUNE_AT pairs, those whose wait is over are forgotten, and
 * each pair still waiting had a try fail within its step (an hour at most): keying by owner
 * adds no pair a failed try did not.
 *
 * The failed delivery (the leader) is tried first when the step ends, so the step grows with
 * its failures instead of starting over with an untried delivery's: the others wait until a
 * millisecond after it, and one claimed once the step has ended (it arrived late in the step,
 * due before the leader) waits a poll more while the leader is not tried again here, up to
 * `graceMs` after the step's end (the leader may have been settled elsewhere: another
 * instance, its window, a delete); the leader's next failure sets the next wait, a 2xx ends it.
 */
export class CoolingTargets {
  readonly #waits = new Map<string, Wait>();

  constructor(
    private readonly limits: {
      /** The worker's poll: how much longer a delivery claimed before the leader waits. */
      pollMs: number;
      /** How long after a step's end the others still wait for its leader to be tried. */
      graceMs: number;
    },
  ) {}

  /** `leader` of `owner` failed a try of `url`, to be tried again at `until`. */
  failed(owner: string | null, url: string, leader: string, until: number): void {
    if (this.#waits.size >= PRUNE_AT) {
      const past = Date.now() - this.limits.graceMs;
      for (const [key, wait] of this.#waits) if (wait.until <= past) this.#waits.delete(key);
    }
    const key = pairKey(owner, url);
    const wait = this.#waits.get(key);
    if (wait === undefined || wait.until < until) this.#waits.set(key, { until, leader });
  }

  succeeded(owner: string | null, url: string): void {
    this.#waits.delete(pairKey(owner, url));
  }

  /** When the delivery `id` of `owner` may try `url`, if after `now`; null when it may be now. */
  until(owner: string | null, url: string, id: string, now: number): number | null {
    const key = pairKey(owner, url);
    const wait = this.#waits.get(key);
    if (wait === undefined) return null;
    if (id === wait.leader) return wait.until > now ? wait.until : null;
    if (wait.until > now) return wait.until + 1;
    if (now - wait.until <= this.limits.graceMs) return now + this.limits.pollMs;
    this.#waits.delete(key);
    return null;
  }
}
