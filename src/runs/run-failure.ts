import { InvalidHistoryError } from "../agent/history.js";
import { HostFailure } from "../agent/loop-context.js";
import type { RunError } from "../agent/run-error.js";
import { isConflict, isStorageError, type StorageErrorKind } from "../store/errors.js";

/**
 * A failure as a run's clients are told it (its `error`, its stop detail, its events and
 * webhooks): `what` failed and the `hint` of what to do. A storage failure is told by its
 * kind, never by the database's own text, address, tables or SQL; those are the log's.
 */
export interface FailureWords {
  what: string;
  hint: string;
}

const BY_KIND: Record<StorageErrorKind, FailureWords> = {
  full: { what: "the database's disk is full", hint: "free space on the database's disk, then start a new run" },
  busy: {
    what: "the database stayed locked by other writers",
    hint: "start a new run; if it keeps happening, look for long transactions holding the database's locks",
  },
  readonly: {
    what: "the database is read-only",
    hint: "make the database writable (its file's permissions, or a primary rather than a replica), then start a new run",
  },
  denied: {
    what: "the database refused the server's access (permissions)",
    hint: "check the server's database role: its credentials and its privileges on the server's tables, then start a new run",
  },
  corrupt: { what: "the database is corrupt", hint: "restore the database from a backup, then start a new run" },
  io: { what: "the database's disk failed a read or a write", hint: "check the database's disk, then start a new run" },
  unavailable: {
    what: "the database could not be reached",
    hint: "check that the database is up and reachable from the server, then start a new run",
  },
};

const UNEXPECTED: FailureWords = {
  what: "an unexpected error (the server log has it, under the run's id)",
  hint: "start a new run once it is fixed",
};

/**
 * `err`, thrown by the store or by the server itself, in words a run's clients may read: a
 * StorageError by its kind, a StoreConflictError by the store's sentence for the rule it
 * broke, anything else by nothing of its own text.
 */
export function failureWords(err: unknown): FailureWords {
  if (isStorageError(err)) return BY_KIND[err.kind];
  if (isConflict(err)) return { what: err.message, hint: "start a new run" };
  return UNEXPECTED;
}

/** `err` as the loop's host throws it (see HostFailure): told in words, kept as the cause. */
export const hostFailure = (err: unknown): HostFailure => {
  const { what, hint } = failureWords(err);
  return new HostFailure(what, hint, { cause: err });
};

/**
 * The run's error (PERSISTENCE_FAILED) when `doing` ("could not record the end of the run")
 * failed with `err`, and the hint of its stop detail.
 */
export function persistenceFailure(doing: string, err: unknown): { error: RunError; hint: string } {
  const { what, hint } = failureWords(err);
  return { error: { code: "PERSISTENCE_FAILED", message: `${doing}: ${what}` }, hint };
}

/**
 * The run's error when its loop threw `err` instead of stopping: an invalid history in its own
 * words (INVALID_HISTORY), a storage failure (STORAGE_FAILED) by its kind, anything else
 * (INTERNAL) by nothing of its text; and the hint of its stop detail, if the failure has one.
 */
export function loopFailure(err: unknown): { error: RunError; hint?: string } {
  if (err instanceof InvalidHistoryError) return { error: { code: err.code, message: err.message } };
  const { what, hint } = failureWords(err);
  const code = isStorageError(err) ? err.code : "INTERNAL";
  return { error: { code, message: `the run could not go on: ${what}` }, hint };
}
