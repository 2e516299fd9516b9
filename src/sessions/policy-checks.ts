import { type ApprovalCeiling, looserThanCeiling } from "../domain/approval-ceiling.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import { badRequest } from "../errors.js";

/**
 * Refuses (400 APPROVAL_POLICY_TOO_LOOSE, naming the tools) a policy asking for a looser
 * mode than APPROVAL_POLICY_MAX (`ceiling`) allows: a session's, or a run's over its
 * session's (`under`).
 */
export function refuseLooserThanCeiling({
  approval,
  under,
  toolNames,
  ceiling,
}: {
  approval?: ApprovalPolicy | null;
  under?: ApprovalPolicy | null;
  toolNames: readonly string[];
  ceiling?: ApprovalCeiling;
}): void {
  const looser = looserThanCeiling({ policy: approval, under, toolNames, ceiling });
  const names = Object.keys(looser);
  if (names.length === 0) return;
  const list = names.map((name) => `${name} (at most ${looser[name]})`).join(", ");
  throw badRequest(
    "APPROVAL_POLICY_TOO_LOOSE",
    `the approval policy is looser than the server allows (APPROVAL_POLICY_MAX) for ${list}`,
    { tools: looser },
  );
}

/**
 * Refuses (400 UNKNOWN_TOOL) a tool name that is not one of `known`, in a `tools` list or as a
 * key of an approval override's `tools`: a misspelt `"Shell": "deny"` must not leave `shell`
 * on its default.
 */
export function refuseUnknownTools({
  tools,
  approval,
  known,
}: {
  tools?: readonly string[];
  approval?: ApprovalPolicy | null;
  known: readonly string[];
}): void {
  const unknownIn = (names: readonly string[]) => names.filter((name) => !known.includes(name));
  const inTools = unknownIn(tools ?? []);
  if (inTools.length) {
    throw badRequest("UNKNOWN_TOOL", `unknown tools: ${inTools.join(", ")}`, { available: known });
  }
  const inApproval = unknownIn(Object.keys(approval?.tools ?? {}));
  if (inApproval.length) {
    throw badRequest("UNKNOWN_TOOL", `approval.tools names unknown tools: ${inApproval.join(", ")}`, {
      available: known,
    });
  }
}
