import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { RunRecord } from "../store/runs.js";

/** What a start request asked for, as an idempotency key's retry is compared with it. */
export interface StartRequestBody {
  input: string;
  maxTurns: number;
  contextMaxChars?: number;
  approval?: ApprovalPolicy;
}

/** JSON with object keys sorted, so that equal values compare equal whatever their key order. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

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
  return differs;
}
