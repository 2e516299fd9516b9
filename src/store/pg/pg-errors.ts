import { DatabaseError } from "pg";
import { StorageError, type StorageErrorKind, StoreConflictError } from "../errors.js";

/** SQLSTATE codes (or their two-character class) and the kind of failure they are. */
const KINDS: [codeOrClass: string, kind: StorageErrorKind][] = [
  ["53100", "full"],
  ["40001", "busy"],
  ["40P01", "busy"],
  ["55P03", "busy"],
  ["57014", "busy"],
  ["25006", "readonly"],
  ["42501", "denied"],
  ["28", "denied"],
  ["XX001", "corrupt"],
  ["XX002", "corrupt"],
  ["58", "io"],
  ["08", "unavailable"],
  ["3D", "unavailable"],
  ["53", "unavailable"],
  ["57", "unavailable"],
];

/** The unique indexes whose violation is a rule of the data, not a failure. */
const RULES: [index: string, rule: StoreConflictError["rule"]][] = [
  ["runs_one_active", "active_run"],
  ["runs_idempotency", "idempotency_key"],
];

/**
 * Socket-level failures of the connection (no SQLSTATE): the server cannot be reached, or the
 * connection broke (of a write already sent, the outcome is unknown: see translateBatchError).
 */
const NETWORK = /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|ENOENT)$/;

/**
 * node-postgres's own failures (no SQLSTATE): the connection broke, no connection could be had
 * in time, a statement went unanswered past the query timeout (its connection is then destroyed).
 */
const CLIENT_SIDE =
  /^Connection terminated|^timeout exceeded when trying to connect|^Query read timeout|is not queryable$/;

/** Of those, the ones after which a statement sent may still have been carried out. */
const SENT = /^Connection terminated|^Query read timeout/;

/** SQLSTATEs of the server ending the connection (admin or crash shutdown, a lost connection). */
const CONNECTION_ENDED = /^(08|57P0)/;

/**
 * The failure of a write transaction all of whose statements, its COMMIT among them, were
 * handed to its connection; `onCommit`: the failure was the COMMIT's own, else that of an
 * earlier statement, the first to fail. Its outcome is unknown (StorageError `unavailable`,
 * `outcomeUnknown`) when no answer of the server says it was rolled back: the connection
 * broke (reset, timed out, ended) before the answer came, or the server ended the connection
 * on the COMMIT (it may have committed first). Anything else is translated as by
 * translatePgError: an error the server answered to a statement before the COMMIT aborted the
 * transaction, a query node-postgres never sent (its client broken before) changed nothing.
 */
export function translateBatchError(err: unknown, { onCommit }: { onCommit: boolean }): unknown {
  if (!(err instanceof Error)) return err;
  const { code } = err as { code?: unknown };
  const unknown =
    err instanceof DatabaseError
      ? onCommit && typeof code === "string" && CONNECTION_ENDED.test(code)
      : (typeof code === "string" && NETWORK.test(code)) || (code === undefined && SENT.test(err.message));
  if (!unknown) return translatePgError(err);
  return new StorageError("unavailable", err.message, { cause: err, outcomeUnknown: true });
}

/**
 * node-postgres's error as the store's: a StorageError with its kind, a StoreConflictError for
 * a broken uniqueness rule or a run whose session is gone, anything else (a bug) unchanged.
 */
export function translatePgError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof StorageError || err instanceof StoreConflictError) return err;
  const { code, constraint } = err as { code?: unknown; constraint?: unknown };
  if (code === "23505") {
    const rule = RULES.find(([index]) => index === constraint)?.[1];
    return rule ? new StoreConflictError(rule, err.message) : err;
  }
  // A run inserted for a session deleted meanwhile (whose delete may have waited on the insert's lock).
  if (code === "23503" && constraint === "runs_session_id_fkey")
    return new StoreConflictError("session_gone", err.message);
  if (typeof code === "string" && NETWORK.test(code))
    return new StorageError("unavailable", err.message, { cause: err });
  if (code === undefined && CLIENT_SIDE.test(err.message)) {
    return new StorageError("unavailable", err.message, { cause: err, outcomeUnknown: SENT.test(err.message) });
  }
  if (typeof code !== "string" || code.length !== 5) return err;
  const kind = KINDS.find(([prefix]) => code.startsWith(prefix))?.[1];
  return kind ? new StorageError(kind, err.message, { cause: err }) : err;
}
