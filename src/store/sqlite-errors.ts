import { messageOf } from "../message-of.js";
import { StorageError, type StorageErrorKind, StoreConflictError } from "./errors.js";

const KINDS: [prefix: string, kind: StorageErrorKind][] = [
  ["SQLITE_FULL", "full"],
  ["SQLITE_BUSY", "busy"],
  ["SQLITE_LOCKED", "busy"],
  ["SQLITE_READONLY", "readonly"],
  ["SQLITE_CORRUPT", "corrupt"],
  ["SQLITE_NOTADB", "corrupt"],
  ["SQLITE_IOERR", "io"],
  ["SQLITE_CANTOPEN", "unavailable"],
  ["SQLITE_PERM", "denied"],
  ["SQLITE_AUTH", "denied"],
];

/** The unique indexes whose violation is a rule of the data, not a failure. */
const RULES: [index: string, rule: StoreConflictError["rule"]][] = [
  ["runs.session_id", "active_run"],
  ["runs_one_active", "active_run"],
  ["runs.session_id, runs.idempotency_key", "idempotency_key"],
];

/**
 * better-sqlite3's error as the store's: a StorageError with its kind, a StoreConflictError
 * for a broken uniqueness rule, anything else (a bug) unchanged.
 */
export function translateSqliteError(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return err;
  const message = messageOf(err);
  if (code === "SQLITE_CONSTRAINT_UNIQUE") {
    // "UNIQUE constraint failed: runs.session_id": which index is in the message's tail.
    const columns = message.replace(/^UNIQUE constraint failed: /, "");
    const rule = RULES.find(([index]) => columns === index)?.[1];
    if (rule) return new StoreConflictError(rule, message);
  }
  const kind = KINDS.find(([prefix]) => code.startsWith(prefix))?.[1];
  return kind ? new StorageError(kind, message, { cause: err }) : err;
}
