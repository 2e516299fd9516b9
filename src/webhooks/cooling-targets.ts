/** Past this many receivers remembered, the ones whose wait is over are forgotten at the next failure. */
const PRUNE_AT = 10_000;

/**
 * Receivers (by URL) whose last try failed, each until that delivery's next try: the other
 * deliveries to it wait until then too, so a receiver that fails gets one try per step of the
 * backoff (or of its Retry-After), not the whole backlog each time a step ends. A 2xx ends its
 * wait. This process's own view: another instance learns from its own tries.
 */
export class CoolingTargets {
  readonly #until = new Map<string, number>();

  failed(url: string, until: number): void {
    if (this.#until.size >= PRUNE_AT) {
      const now = Date.now();
      for (const [key, at] of this.#until) if (at <= now) this.#until.delete(key);
    }
    this.#until.set(url, Math.max(this.#until.get(url) ?? 0, until));
  }

  succeeded(url: string): void {
    this.#until.delete(url);
  }

  /** When `url` may be tried again, if after `now`; null when it may be now. */
  until(url: string, now: number): number | null {
    const at = this.#until.get(url);
    if (at === undefined) return null;
    if (at > now) return at;
    this.#until.delete(url);
    return null;
  }
}
