import { canonicalJson as canonical } from "../agent/canonical-json.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { WebhookTarget } from "../domain/webhook.js";
import type { KeyedRun } from "../store/keyed-run.js";
import { defaultRunLimits, type RunLimits } from "../store/runs.js";

/** The settings of a start a server default fills when the request leaves them out (DEFAULT_MAX_TURNS, DEFAULT_MAX_*). */
const DEFAULTED = ["maxTurns", "maxTokens", "maxDurationMs", "maxToolCalls", "loopRepeatLimit"] as const;
export type DefaultedField = (typeof DEFAULTED)[number];

/** The fields of `request` it leaves to the server's defaults (absent or null). */
export const defaultedFields = (request: Partial<Record<DefaultedField, unknown>>): DefaultedField[] =>
  DEFAULTED.filter((field) => request[field] == null);

/** What a start request asked for, as an idempotency key's retry is compared with it. */
export interface StartRequestBody {
  input: string;
  maxTurns: number;
  contextMaxChars?: number;
  approval?: ApprovalPolicy;
  limits?: RunLimits;
  /** The run's own webhook target, and its session's: the one a run takes is the first of them. */
  webhook?: WebhookTarget;
  session: { webhook: WebhookTarget | null };
  /**
   * The fields the request left to the server's defaults (their values above are those
   * defaults): each matches whatever value the key's run has, since the defaults may have
   * changed since that run started. Absent: every field is compared.
   */
  defaulted?: readonly DefaultedField[];
}

/**
 * The fields of a repeated start request that differ from the run its idempotency key
 * started (empty: the same request, which gets the same run back): the fields it sent, each
 * compared with the run's value (a field it left to a default is no difference: see
 * `defaulted`). Whether the input differs the database told (`existing.sameInput`, compared
 * with this request's).
 */
export function differingFields(existing: KeyedRun, request: StartRequestBody): string[] {
  const differs: string[] = [];
  const sent = (field: string) => !request.defaulted?.includes(field as DefaultedField);
  if (!existing.sameInput) differs.push("input");
  if (sent("maxTurns") && existing.maxTurns !== request.maxTurns) differs.push("maxTurns");
  if ((existing.contextMaxChars ?? null) !== (request.contextMaxChars ?? null)) differs.push("contextMaxChars");
  if (canonical(existing.approval ?? null) !== canonical(request.approval ?? null)) differs.push("approval");
  const limits = request.limits ?? defaultRunLimits();
  for (const field of Object.keys(limits) as (keyof RunLimits)[]) {
    if (sent(field) && existing[field] !== limits[field]) differs.push(field);
  }
  if (!sameTarget(existing.webhook, request.webhook ?? request.session.webhook)) differs.push("webhook");
  return differs;
}

/**
 * Whether a run whose start resolved `stored` is the one a request naming `named` (its own
 * target, else its session's) would start: the same URL and events, or neither naming one (the
 * server's default, WEBHOOK_URL, may have changed since: that is no difference of the request).
 * A target stored without saying whether it was the server's (see ResolvedWebhookTarget) is
 * either: the request names the same URL and events, or none.
 */
function sameTarget(stored: KeyedRun["webhook"], named: WebhookTarget | null): boolean {
  const asNamed = named ? canonical({ url: named.url, events: named.events }) : null;
  if (!stored) return asNamed === null;
  const own = canonical({ url: stored.url, events: stored.events });
  if (stored.serverDefault === undefined) return asNamed === null || asNamed === own;
  return asNamed === (stored.serverDefault ? null : own);
}
