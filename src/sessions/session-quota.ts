import { tooManySessions } from "../errors.js";
import type { Store } from "../store/store.js";

/**
 * MAX_SESSIONS_PER_KEY: how many sessions one owner (API key) may keep. A key's creations
 * run one after another, each checking the count before it creates anything, so a burst of
 * concurrent requests cannot pass the quota together (the store's count and insert are
 * separate calls). Owners without a key (null) and a limit of 0 are not limited.
 */
export class SessionQuota {
  readonly #tails = new Map<string, Promise<void>>();

  constructor(private readonly deps: { store: Store; limit: number }) {}

  /** Runs `create` once `owner`'s earlier creations are done, if it is under the quota; else TOO_MANY_SESSIONS. */
  async within<T>(owner: string | null, create: () => Promise<T>): Promise<T> {
    const { limit, store } = this.deps;
    if (owner === null || limit <= 0) return create();
    const run = (this.#tails.get(owner) ?? Promise.resolve()).then(async () => {
      if ((await store.sessions.countOf(owner)) >= limit) throw tooManySessions(limit);
      return create();
    });
    const tail = run.then(
      () => {},
      () => {},
    );
    this.#tails.set(owner, tail);
    void tail.then(() => {
      if (this.#tails.get(owner) === tail) this.#tails.delete(owner);
    });
    return run;
  }
}
