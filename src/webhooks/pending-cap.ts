/**
 * The cap on an owner's pending webhook deliveries (WEBHOOK_MAX_PENDING_PER_KEY): a key whose
 * receiver is down would otherwise pile up deliveries without bound, each retried for the whole
 * retry window. Every CAP_CHECK_POLLS polls the worker gives up each owner's pending deliveries
 * past its oldest `cap` (its newest): `failed` with `capReason`, their bodies dropped (they are
 * never sent again). Nothing else about their runs changes. Checking now and then, not at each
 * write, keeps the count (up to `cap` index entries: 3 ms at 10,000 on PostgreSQL) off the
 * runs' commits; an owner may pass the cap by what it writes between two checks.
 */
export const DEFAULT_MAX_PENDING_PER_KEY = 10_000;

/** The cap is applied every this many polls (WEBHOOK_POLL_MS): every 10 s by default. */
export const CAP_CHECK_POLLS = 10;

/** The `reason` of a delivery given up at the cap. */
export const capReason = (cap: number): string =>
  `given up: ${cap} older deliveries of its key were pending (WEBHOOK_MAX_PENDING_PER_KEY)`;
