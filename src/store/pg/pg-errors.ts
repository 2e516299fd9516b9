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

/** Socket-level failures of the connection (no SQLSTATE): the server cannot be reached. */
const NETWORK = /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|ENOENT)$/;

/**
 * node-postgres's own failures (no SQLSTATE): the connection broke, no connection could be had
 * in time, a statement went unanswered past the query timeout (its connection is then destroyed).
 */
const CLIENT_SIDE =
  /^Connection terminated|^timeout exceeded when trying to connect|^Query read timeout|is not queryable$/;

/** Of those, the ones after which a statement sent may still have been carried out. */
const SENT = /^Connection terminated|^Query read timeout/;

/**
 * node-postgres's error as the store's: a StorageError with its kind, a StoreConflictError for
 * a broken uniqueness rule or a run whose session is gone, anything else (a bug) unchanged.
 */
export function translatePgError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
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
