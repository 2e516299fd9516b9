/**
 * A moment (on `performance.now()`'s clock) that stages run one after another share: each
 * waits for what it waits for at most its own cap and never past the deadline, so together
 * they end by it however long each would take alone. A shutdown passes one down to the
 * stages that follow its grace period (see serve.ts), so that their sum stays within its
 * budget. Immutable: a stage cannot extend what the next ones get.
 */
export class Deadline {
  /** No shared deadline: each stage takes its own cap (an app or worker stopped on its own, as in tests). */
  static readonly NONE = new Deadline(Number.POSITIVE_INFINITY);

  /** The deadline `ms` from now. */
  static in(ms: number): Deadline {
    return new Deadline(performance.now() + ms);
  }

  private constructor(readonly at: number) {}

  /** Milliseconds left until it (0 once it passed; Infinity for NONE). */
  left(): number {
    return Math.max(0, this.at - performance.now());
  }

  /** `capMs`, or what is left until the deadline when that is less. */
  within(capMs: number): number {
    return Math.min(capMs, this.left());
  }

  /**
   * Waits for `promise` to settle, at most `within(capMs)` (without a cap, until the deadline);
   * true when it settled in time. Never rejects: a stage that failed is over all the same. A
   * promise already settled counts as in time, even once the deadline has passed.
   */
  async wait(promise: Promise<unknown>, capMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    const settled = promise.then(
      () => true,
      () => true,
    );
    const ms = this.within(capMs);
    // Neither a cap nor a deadline: setTimeout would take Infinity for 1 ms.
    if (ms === Number.POSITIVE_INFINITY) return settled;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([settled, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
