import { z } from "zod";

export const ApprovalModeSchema = z.enum(["allow", "ask", "deny"]);
export type ApprovalMode = z.infer<typeof ApprovalModeSchema>;

/** An approval override, set on a session or on a run. */
export const ApprovalPolicySchema = z.strictObject({
  default: ApprovalModeSchema.optional(),
  tools: z.record(z.string().min(1).max(128), ApprovalModeSchema).optional(),
});
export type ApprovalPolicy = z.infer<typeof ApprovalPolicySchema>;

/** Without any override: read-only tools are allowed, the others ask. */
export function defaultApprovalMode(readOnly: boolean): "allow" | "ask" {
  return readOnly ? "allow" : "ask";
}

export interface EvaluateApprovalInput {
  tool: string;
  readOnly: boolean;
  session?: ApprovalPolicy | null;
  run?: ApprovalPolicy | null;
}

/**
 * What happens to a call of `tool`, decided without I/O. A per-tool setting wins
 * over a default, and a run's setting over its session's: run.tools, session.tools,
 * run.default, session.default; else read-only tools `allow` and the rest `ask`.
 */
export function evaluateApproval({ tool, readOnly, session, run }: EvaluateApprovalInput): ApprovalMode {
  return (
    run?.tools?.[tool] ?? session?.tools?.[tool] ?? run?.default ?? session?.default ?? defaultApprovalMode(readOnly)
  );
}
