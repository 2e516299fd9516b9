import { canonicalJson as canonical } from "../agent/canonical-json.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import { defaultRunLimits, type RunLimits, type RunRecord } from "../store/runs.js";

/** What a start request asked for, as an idempotency key's retry is compared with it. */
export interface StartRequestBody {
  input: string;
  maxTurns: number;
  contextMaxChars?: number;
  approval?: ApprovalPolicy;
  limits?: RunLimits;
}

/**
 * The fields of a repeated start request that differ from the run its idempotency key
 * started (empty: the same request, which gets the same run back).
 */
export function differingFields(existing: RunRecord, request: StartRequestBody): string[] {
  const differs: string[] = [];
  if (existing.input !== request.input) differs.push("input");
  if (existing.maxTurns !== request.maxTurns) differs.push("maxTurns");
  if ((existing.contextMaxChars ?? null) !== (request.contextMaxChars ?? null)) differs.push("contextMaxChars");
  if (canonical(existing.approval ?? null) !== canonical(request.approval ?? null)) differs.push("approval");
  const limits = request.limits ?? defaultRunLimits();
  for (const field of Object.keys(limits) as (keyof RunLimits)[]) {
    if (existing[field] !== limits[field]) differs.push(field);
  }
  return differs;
}
