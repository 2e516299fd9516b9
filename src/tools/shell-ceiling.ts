import type { ApprovalCeiling } from "../domain/approval-ceiling.js";
import type { ShellSandbox } from "./sandbox.js";

/** The ceiling in force when `shell` would run unsandboxed between several keys (see ceilingInForce). */
export const UNSANDBOXED_KEYS_CEILING: ApprovalCeiling = { tools: { shell: "deny" } };

/**
 * The approval ceiling in force: APPROVAL_POLICY_MAX when the operator set it. Else, when
 * `shell` runs unsandboxed on a server with several API keys, `shell=deny` (`shellDenied`):
 * such a command runs as the server's user and reads the server's environment
 * (/proc/<pid>/environ: every key of AGENT_API_KEYS, OPENAI_API_KEY), and each key approves
 * its own runs' calls, so approval guards nothing between keys. The operator opts in by
 * setting APPROVAL_POLICY_MAX (or makes the sandbox work).
 */
export function ceilingInForce({
  configured,
  sandbox,
  keyCount,
}: {
  configured: ApprovalCeiling | undefined;
  sandbox: ShellSandbox;
  keyCount: number;
}): { ceiling: ApprovalCeiling | undefined; shellDenied: boolean } {
  if (configured || sandbox.kind !== "none" || keyCount < 2) return { ceiling: configured, shellDenied: false };
  return { ceiling: UNSANDBOXED_KEYS_CEILING, shellDenied: true };
}
