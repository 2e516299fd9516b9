/**
 * Work run once the current turn of the event loop is done (in the check phase, as
 * `setImmediate`), shared by every caller: one immediate however many are queued. A streaming
 * server queues a flush per live run per turn; each its own immediate would cost an object
 * and a pass through the timers' list apiece.
 */
export class EndOfTurn {
  #queued: (() => void)[] = [];
  #scheduled = false;

  /** Runs `task` at the end of this turn, in queueing order. A task must not throw (as a `setImmediate` callback). */
  queue(task: () => void): void {
    this.#queued.push(task);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#run());
  }

  #run(): void {
    this.#scheduled = false;
    const tasks = this.#queued;
    this.#queued = [];
    for (const task of tasks) task();
  }
}

/** The process's one queue. */
export const endOfTurn = new EndOfTurn();
