import { messageOf } from "../message-of.js";

/**
 * Whether the database has been taking writes: the last write failure is
 * remembered until a later write succeeds. Readiness reports it.
 */
export class StorageHealth {
  #failure: { at: number; message: string } | null = null;

  recordSuccess(): void {
    this.#failure = null;
  }

  recordFailure(err: unknown): void {
    this.#failure = { at: Date.now(), message: messageOf(err) };
  }

  /** The last write failure not yet followed by a successful write, if any. */
  get failure(): { at: number; message: string } | null {
    return this.#failure;
  }
}
