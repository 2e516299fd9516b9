import type { ApprovalCeiling } from "../domain/approval-ceiling.js";
import type { ShellSandbox } from "./sandbox.js";

/** The ceiling in force when `shell` would run unsandboxed between several keys (see ceilingInForce). */
export const UNSANDBOXED_KEYS_CEILING: ApprovalCeiling = { tools: { shell: "deny" } };

/**
 * The approval ceiling in force: APPROVAL_POLICY_MAX as the operator set it, with, when
 * `shell` runs unsandboxed on a server with several API keys and the ceiling says nothing of
 * `shell` (neither `shell=` nor `*=`), `shell=deny` added (`shellDenied`): such a command runs
 * as the server's user and reads the server's environment (/proc/<pid>/environ: every key of
 * AGENT_API_KEYS, OPENAI_API_KEY), and each key approves its own runs' calls, so approval
 * guards nothing between keys. The operator opts in by naming `shell` in APPROVAL_POLICY_MAX
 * (or makes the sandbox work); a ceiling set for other tools does not open it.
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
  const shellNamed =
    configured !== undefined && (configured.tools.shell !== undefined || configured.default !== undefined);
  if (shellNamed || sandbox.kind !== "none" || keyCount < 2) return { ceiling: configured, shellDenied: false };
  if (!configured) return { ceiling: UNSANDBOXED_KEYS_CEILING, shellDenied: true };
  return {
    ceiling: { ...configured, tools: { ...configured.tools, ...UNSANDBOXED_KEYS_CEILING.tools } },
    shellDenied: true,
  };
}
