/** Past this many (owner, receiver) pairs remembered, the ones whose wait is over are forgotten at the next failure. */
const PRUNE_AT = 10_000;

/** The table's key for a pair: unambiguous whatever either holds. */
const pairKey = (owner: string | null, url: string): string => JSON.stringify([owner, url]);

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
 */
export class CoolingTargets {
  readonly #until = new Map<string, number>();

  failed(owner: string | null, url: string, until: number): void {
    if (this.#until.size >= PRUNE_AT) {
      const now = Date.now();
      for (const [key, at] of this.#until) if (at <= now) this.#until.delete(key);
    }
    const key = pairKey(owner, url);
    this.#until.set(key, Math.max(this.#until.get(key) ?? 0, until));
  }

  succeeded(owner: string | null, url: string): void {
    this.#until.delete(pairKey(owner, url));
  }

  /** When `owner` may try `url` again, if after `now`; null when it may be now. */
  until(owner: string | null, url: string, now: number): number | null {
    const key = pairKey(owner, url);
    const at = this.#until.get(key);
    if (at === undefined) return null;
    if (at > now) return at;
    this.#until.delete(key);
    return null;
  }
}
