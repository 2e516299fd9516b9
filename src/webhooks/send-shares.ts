/**
 * How many sends each owner (API key; null: the keyless server's) may have under way, learnt
 * from how its receivers answer: an owner starts with one; each try answered 2xx within the
 * worker's stuck threshold lets it have one more, up to `max` (a slow 2xx changes nothing);
 * each failed try (no 2xx: timed out, refused, any other status) takes it back to one and
 * marks it failing until its next quick 2xx. A receiver that never answers thus
 * holds one slot per owner, not `max`, and one that recovers has its share back after a few
 * deliveries. Kept in memory per process, one entry per owner that ever sent (as many as keys).
 */
/** How a try went, for the shares: a quick 2xx, a 2xx past the stuck threshold, or no 2xx. */
export type TryOutcome = "ok" | "slow" | "failed";

export class SendShares {
  readonly #limits = new Map<string | null, number>();
  readonly #failing = new Set<string | null>();

  constructor(readonly max: number) {}

  /** What an owner not in `limits` may have under way. */
  readonly first = 1;

  /** The owners whose share is not `first`, with theirs. */
  get limits(): ReadonlyMap<string | null, number> {
    return this.#limits;
  }

  /** The owners whose last try failed. */
  get failing(): ReadonlySet<string | null> {
    return this.#failing;
  }

  limitOf(owner: string | null): number {
    return this.#limits.get(owner) ?? this.first;
  }

  /**
   * Told of each try's outcome: `ok` when the receiver answered 2xx in time, `slow` when it
   * answered 2xx after the stuck threshold (neither healthy nor failed: nothing changes).
   */
  record(owner: string | null, outcome: TryOutcome): void {
    if (outcome === "slow") return;
    if (outcome === "ok") {
      this.#limits.set(owner, Math.min(this.max, this.limitOf(owner) + 1));
      this.#failing.delete(owner);
    } else {
      this.#limits.delete(owner);
      this.#failing.add(owner);
    }
  }
}
