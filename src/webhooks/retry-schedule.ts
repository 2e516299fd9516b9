export interface RetrySchedule {
  /** The wait after the first failed try; each further failure doubles it. */
  baseMs: number;
  /** The longest wait between tries (a receiver's Retry-After included). */
  maxMs: number;
  /** How long after its event a delivery is still tried (24 h). */
  windowMs: number;
}

/**
 * When the next try of a delivery that failed `failures` times is due; null once past its
 * window. A receiver's own wait (`retryAfterMs`, from its Retry-After) is kept when longer
 * than the schedule's, up to `maxMs`.
 */
export function nextTryAt(
  schedule: RetrySchedule,
  {
    failures,
    createdAt,
    now,
    retryAfterMs = null,
  }: { failures: number; createdAt: number; now: number; retryAfterMs?: number | null },
): number | null {
  const backoff = Math.min(schedule.baseMs * 2 ** Math.max(0, failures - 1), schedule.maxMs);
  const wait = Math.max(backoff, Math.min(retryAfterMs ?? 0, schedule.maxMs));
  const at = now + wait;
  return at - createdAt > schedule.windowMs ? null : at;
}

/**
 * How late after its window a delivery may be claimed and still be tried (at most a tenth of
 * the window): its last try may be due at the window's very end, and a claim comes a poll, or a
 * receiver's cooling, after that.
 */
export const CLAIM_LATE_MS = 60_000;

/**
 * Whether a delivery claimed at `now` is past its window (created at `createdAt`), beyond
 * the lateness a claim may have (CLAIM_LATE_MS): nobody could send it in time (a downtime), and
 * it is given up untried.
 */
export function closedBeforeClaim(schedule: RetrySchedule, { createdAt, now }: { createdAt: number; now: number }) {
  return now - createdAt > schedule.windowMs + Math.min(CLAIM_LATE_MS, schedule.windowMs / 10);
}

/**
 * A Retry-After header's wait in ms (delay-seconds or an HTTP date, RFC 9110 10.2.3); null
 * when absent or unreadable, 0 for a date already past.
 */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP date names its day and month (Date.parse would take "-5" for a year too).
  if (!/[a-z]/i.test(value)) return null;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
