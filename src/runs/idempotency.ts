import { canonicalJson as canonical } from "../agent/canonical-json.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { WebhookTarget } from "../domain/webhook.js";
import type { KeyedRun } from "../store/keyed-run.js";
import { defaultRunLimits, type RunLimits } from "../store/runs.js";

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
}

/**
 * The fields of a repeated start request that differ from the run its idempotency key
 * started (empty: the same request, which gets the same run back). Whether the input differs
 * the database told (`existing.sameInput`, compared with this request's).
 */
export function differingFields(existing: KeyedRun, request: StartRequestBody): string[] {
  const differs: string[] = [];
  if (!existing.sameInput) differs.push("input");
  if (existing.maxTurns !== request.maxTurns) differs.push("maxTurns");
  if ((existing.contextMaxChars ?? null) !== (request.contextMaxChars ?? null)) differs.push("contextMaxChars");
  if (canonical(existing.approval ?? null) !== canonical(request.approval ?? null)) differs.push("approval");
  const limits = request.limits ?? defaultRunLimits();
  for (const field of Object.keys(limits) as (keyof RunLimits)[]) {
    if (existing[field] !== limits[field]) differs.push(field);
  }
  if (!sameTarget(existing.webhook, request.webhook ?? request.session.webhook)) differs.push("webhook");
  return differs;
}

/**
 * Whether a run whose start resolved `stored` is the one a request naming `named` (its own
 * target, else its session's) would start: the same URL and events, or neither naming one (the
 * server's default, WEBHOOK_URL, may have changed since: that is no difference of the request).
 */
function sameTarget(stored: KeyedRun["webhook"], named: WebhookTarget | null): boolean {
  const own = stored && !stored.serverDefault ? { url: stored.url, events: stored.events } : null;
  return canonical(own) === canonical(named ? { url: named.url, events: named.events } : null);
}
