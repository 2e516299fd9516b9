import { StorageError, type StorageErrorKind } from "../../src/store/errors.js";
import type { RunChange, RunChangeKind, Store } from "../../src/store/store.js";

/** One commitRun as the wrapped store saw it. */
export interface SeenCommit {
  runId: string;
  changes: readonly RunChange[];
  events: readonly { seq: number; type: string }[];
}

type ChangeMatch = RunChangeKind | ((change: RunChange) => boolean);

/**
 * A Store that injects faults into another, whatever its backend: fail the Nth commit, fail
 * commits holding a kind of change, fail every write (a full disk), stall writes. Reads pass
 * through. A failed write writes nothing and is reported like the backend would report it
 * (StorageError; `writeFailure` until a later write succeeds).
 */
export class FaultyStore {
  /** Every commitRun that reached the store (failed or not), in order. */
  readonly commits: SeenCommit[] = [];
  readonly store: Store;
  #commitCount = 0;
  #failAt = new Map<number, StorageErrorKind>();
  #failChanges: { match: ChangeMatch; kind: StorageErrorKind; times: number }[] = [];
  #failAll: StorageErrorKind | null = null;
  #stall: { until: Promise<void>; match: ChangeMatch | null } | null = null;
  #failure: { at: number; message: string } | null = null;

  constructor(readonly inner: Store) {
    const write =
      <A extends unknown[], R>(fn: (...args: A) => Promise<R>, changesOf?: (...args: A) => readonly RunChange[]) =>
      async (...args: A): Promise<R> => {
        if (this.#stall && (this.#stall.match === null || matches(this.#stall.match, changesOf?.(...args) ?? []))) {
          await this.#stall.until;
        }
        const kind = this.#faultFor(changesOf ? changesOf(...args) : null);
        if (kind) throw this.#fail(kind);
        const result = await fn(...args);
        this.#failure = null;
        return result;
      };
    const commitRun = write(inner.commitRun.bind(inner), (_runId, changes) => changes);
    this.store = {
      ...inner,
      sessions: { ...inner.sessions, insert: write(inner.sessions.insert), delete: write(inner.sessions.delete) },
      runs: { ...inner.runs, create: write(inner.runs.create) },
      commitRun: async (runId, changes, events, fence) => {
        const n = ++this.#commitCount;
        this.commits.push({ runId, changes, events: events.map((e) => ({ seq: e.seq, type: e.type })) });
        const nth = this.#failAt.get(n);
        if (nth) {
          this.#failAt.delete(n);
          throw this.#fail(nth);
        }
        return commitRun(runId, changes, events, fence);
      },
      probeWrites: write(inner.probeWrites.bind(inner)),
      writeFailure: () => this.#failure ?? inner.writeFailure(),
    };
  }

  /** The `n`th commitRun from now (1: the next) fails. */
  failNthCommit(n: number, kind: StorageErrorKind = "io"): void {
    this.#failAt.set(this.#commitCount + n, kind);
  }

  /** Commits holding a matching change fail, `times` times (default: until healed). */
  failChange(
    match: ChangeMatch,
    { kind = "io", times = Number.POSITIVE_INFINITY }: { kind?: StorageErrorKind; times?: number } = {},
  ): void {
    this.#failChanges.push({ match, kind, times });
  }

  /** Every write fails, as on a full disk, until `heal`. */
  failWrites(kind: StorageErrorKind = "full"): void {
    this.#failAll = kind;
  }

  /**
   * Writes wait (before reaching the store) until the returned function is called: every
   * write, or with `match` only the commits holding a matching change.
   */
  stallWrites(match: ChangeMatch | null = null): () => void {
    let release!: () => void;
    const until = new Promise<void>((resolve) => {
      release = () => {
        this.#stall = null;
        resolve();
      };
    });
    this.#stall = { until, match };
    return release;
  }

  /** Removes every injected fault. */
  heal(): void {
    this.#failAt.clear();
    this.#failChanges = [];
    this.#failAll = null;
  }

  #fail(kind: StorageErrorKind): StorageError {
    const err = fault(kind);
    this.#failure = { at: Date.now(), message: err.message };
    return err;
  }

  /** The fault for a write; `changes` is null for a write that is not a run's commit. */
  #faultFor(changes: readonly RunChange[] | null): StorageErrorKind | null {
    if (this.#failAll) return this.#failAll;
    if (changes === null) return null;
    for (const rule of this.#failChanges) {
      if (rule.times <= 0) continue;
      if (matches(rule.match, changes)) {
        rule.times--;
        return rule.kind;
      }
    }
    return null;
  }
}

const matches = (match: ChangeMatch, changes: readonly RunChange[]): boolean =>
  changes.some((c) => (typeof match === "string" ? c.kind === match : match(c)));

const MESSAGES: Record<StorageErrorKind, string> = {
  full: "database or disk is full",
  busy: "database is locked",
  readonly: "attempt to write a readonly database",
  denied: "access permission denied",
  corrupt: "database disk image is malformed",
  io: "disk I/O error",
  unavailable: "unable to open database file",
};

const fault = (kind: StorageErrorKind): StorageError => new StorageError(kind, MESSAGES[kind]);
