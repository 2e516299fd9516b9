import { tooManySessions } from "../errors.js";
import { isConflict } from "../store/errors.js";
import type { OwnerLimit, Store } from "../store/store.js";

/**
 * MAX_SESSIONS_PER_KEY: how many sessions one owner (API key) may keep. The database enforces
 * it, for every instance: the insert is given `limitOf(owner)` and refused at the limit. In
 * this process a key's creations also run one after another, each checking the count before
 * it creates anything (its workspace), so a burst here makes no workspace in vain. Owners
 * without a key (null) and a limit of 0 are not limited.
 */
export class SessionQuota {
  readonly #tails = new Map<string, Promise<void>>();

  constructor(private readonly deps: { store: Store; limit: number }) {}

  /** What the store's insert is to enforce for `owner`; none when it is not limited. */
  limitOf(owner: string | null): OwnerLimit | undefined {
    const { limit } = this.deps;
    return owner === null || limit <= 0 ? undefined : { owner, max: limit };
  }

  /** The error to answer for a failed insert: TOO_MANY_SESSIONS when the store refused it at the limit. */
  refusal(err: unknown): unknown {
    return isConflict(err, "owner_sessions") ? tooManySessions(this.deps.limit) : err;
  }

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
