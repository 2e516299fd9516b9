/**
 * The steered inputs steer requests of this process wait for, by id: each from before its
 * request stores it until that request has answered (see steerActive). A run ending here leaves
 * such input to its request, which starts (or queues) the run of it with its own answer; input
 * no request here waits for is queued by the run's end (see queueInputsLeftBy).
 */
export class InputWaits {
  readonly #ids = new Map<string, number>();

  /** Counts one more request waiting for input `id`, until the returned release (idempotent) is called. */
  hold(id: string): () => void {
    this.#ids.set(id, (this.#ids.get(id) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#ids.get(id) ?? 1) - 1;
      if (left > 0) this.#ids.set(id, left);
      else this.#ids.delete(id);
    };
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }
}
