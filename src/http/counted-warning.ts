/** Where a warning goes (a pino logger fits). */
export interface WarnLogger {
  warn(fields: object, message: string): void;
}

/**
 * A warning about something that may happen many times a second: logged at its first
 * occurrence, then at most once every `everyMs` with how many of each kind were counted
 * since the last line (none when nothing was), beside the fixed `fields`. Its timer does not
 * keep the process alive; `close` stops it.
 */
export class CountedWarning<Kind extends string> {
  readonly #counts = new Map<Kind, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      log: WarnLogger;
      message: string;
      everyMs: number;
      /** The kinds counted, each a field of the line (0 when none came). */
      kinds: readonly Kind[];
      fields?: object;
    },
  ) {}

  /** Counts what happened (by kind); logs at once when no line was due to wait. */
  count(counts: Partial<Record<Kind, number>>): void {
    for (const kind of this.options.kinds) {
      const n = counts[kind] ?? 0;
      if (n > 0) this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + n);
    }
    if (this.#timer === undefined) this.#report();
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  readonly #report = (): void => {
    this.#timer = undefined;
    if (this.#counts.size === 0) return;
    const counted = Object.fromEntries(this.options.kinds.map((kind) => [kind, this.#counts.get(kind) ?? 0]));
    this.options.log.warn({ ...this.options.fields, ...counted }, this.options.message);
    this.#counts.clear();
    this.#timer = setTimeout(this.#report, this.options.everyMs).unref();
  };
}
