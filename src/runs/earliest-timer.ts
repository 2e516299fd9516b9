/**
 * One timer for the earliest of several deadlines: `within(ms)` makes `task` due in `ms` at the
 * latest (a deadline already sooner stands), `clear()` drops it. `task` must not throw (as a
 * `setTimeout` callback).
 */
export class EarliestTimer {
  #timer: NodeJS.Timeout | null = null;
  /** When #timer fires (performance.now()). */
  #due = 0;
  readonly #fire = (): void => {
    this.#timer = null;
    this.task();
  };

  constructor(private readonly task: () => void) {}

  within(ms: number): void {
    const due = performance.now() + ms;
    if (this.#timer) {
      if (this.#due <= due) return;
      clearTimeout(this.#timer);
    }
    this.#due = due;
    this.#timer = setTimeout(this.#fire, ms);
  }

  clear(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
