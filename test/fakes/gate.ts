/**
 * A deferred a test opens when it chooses: `const g = gate(); ...; await g.wait; g.open()`.
 * Gates make concurrency in tests deterministic: code under test waits on `g.wait`,
 * and the test decides the instant it continues. No timers, no sleeps.
 */
export interface Gate<T = void> {
  /** Settles when the gate is opened (or failed). */
  readonly wait: Promise<T>;
  /** Lets everything waiting on the gate continue, with `value`. */
  open(value: T): void;
  /** Rejects everything waiting on the gate with `error`. */
  fail(error: unknown): void;
  /** Whether `open` or `fail` was called. */
  readonly settled: boolean;
}

export function gate<T = void>(): Gate<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  let settled = false;
  const wait = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A failed gate nobody awaits must not become an unhandled rejection.
  wait.catch(() => {});
  return {
    wait,
    open(value: T) {
      settled = true;
      resolve(value);
    },
    fail(error: unknown) {
      settled = true;
      reject(error);
    },
    get settled() {
      return settled;
    },
  };
}

/**
 * Lets every pending promise callback run (one macrotask turn). Not a sleep: it waits
 * for no clock, only for already-queued work, so "X has not happened yet" can be asserted
 * after the code under test had every chance to do X.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A door a faked call waits at: `arrived` settles once one comes to it (`pass`), which goes on
 * once the test calls `release`.
 */
export function door(): { arrived: Promise<void>; release: () => void; pass: () => Promise<void> } {
  let arrive!: () => void;
  let release!: () => void;
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  const opened = new Promise<void>((resolve) => (release = resolve));
  return {
    arrived,
    release,
    pass: async () => {
      arrive();
      await opened;
    },
  };
}
