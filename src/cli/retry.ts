import { CliError } from "./cli-error.js";

/** How long the client keeps trying to reach a server that went away before it gives up. */
export const GIVE_UP_MS = 30_000;

/** Waits between attempts: 200 ms, doubling up to 2 s. */
export class Backoff {
  #delay = 200;

  reset(): void {
    this.#delay = 200;
  }

  async wait(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, this.#delay));
    this.#delay = Math.min(this.#delay * 2, 2_000);
  }
}

/**
 * `attempt` until it succeeds; a retryable `CliError` (the server away, full or restarting)
 * is tried again for up to `GIVE_UP_MS`, unless `stopped()` says the answer is not wanted
 * any more (then it resolves undefined). Anything else is thrown as it is.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  { stopped = () => false }: { stopped?: () => boolean } = {},
): Promise<T | undefined> {
  const since = Date.now();
  const backoff = new Backoff();
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof CliError) || !error.retryable || Date.now() - since > GIVE_UP_MS) throw error;
    }
    await backoff.wait();
    if (stopped()) return undefined;
  }
}
