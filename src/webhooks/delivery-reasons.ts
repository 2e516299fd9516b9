/*
 * The `reason` a failed delivery records: why it failed, in the server's own words (these, and
 * the pending cap's: see pending-cap.ts). Of them only a refused target's names its receiver (its host, the address the host resolves to):
 * a listing that hides the receiver replaces that one (see `hiddenReceiverReason`).
 */

const REFUSED_PREFIX = "target refused: ";

/** Its target was refused at the send (a private address, credentials in the URL): `message` names it. */
export const refusedReason = (message: string): string => `${REFUSED_PREFIX}${message}`;

/** Its window (WEBHOOK_RETRY_WINDOW_MS) closed before anyone sent it (the server down longer than that). */
export const notSentReason = (windowMs: number): string =>
  `not sent within WEBHOOK_RETRY_WINDOW_MS (${windowMs} ms) of its event`;

/** Its window closed while its receiver answered no try with a 2xx. */
export const noSuccessReason = (windowMs: number): string =>
  `no 2xx answer within WEBHOOK_RETRY_WINDOW_MS (${windowMs} ms) of its event`;

/** Its receiver answered a try with 410 Gone: it wants no more deliveries (Standard Webhooks), so none is tried again. */
export const GONE_REASON = "the receiver answered 410 Gone: it wants no more deliveries";

/** What an API key is shown of a tried delivery to the operator's hidden receiver: a try's error, and a refusal. */
export const HIDDEN_RECEIVER_ERROR = "the operator's receiver was not reached";
export const HIDDEN_RECEIVER_REFUSED = "the operator's receiver was refused";

/** `reason` as a listing that hides the delivery's receiver shows it: a refusal's replaced, the others as they are. */
export const hiddenReceiverReason = (reason: string | null): string | null =>
  reason?.startsWith(REFUSED_PREFIX) ? HIDDEN_RECEIVER_REFUSED : reason;
