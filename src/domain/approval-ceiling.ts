import { type ApprovalMode, ApprovalModeSchema, type ApprovalPolicy } from "./approval-policy.js";

/**
 * The operator's ceiling on approval policies (APPROVAL_POLICY_MAX): for each tool, the
 * loosest mode a session or run may give it. `default` (written `*=mode`) covers the tools
 * not named; a tool covered by neither has no ceiling (`allow`).
 */
export interface ApprovalCeiling {
  default?: ApprovalMode;
  tools: Record<string, ApprovalMode>;
}

const RANK: Record<ApprovalMode, number> = { allow: 0, ask: 1, deny: 2 };

/** The stricter of two modes (allow < ask < deny). */
export const stricter = (a: ApprovalMode, b: ApprovalMode): ApprovalMode => (RANK[a] >= RANK[b] ? a : b);

/** The loosest mode the ceiling lets `tool` have. */
export function ceilingOf(ceiling: ApprovalCeiling, tool: string): ApprovalMode {
  return ceiling.tools[tool] ?? ceiling.default ?? "allow";
}

/** `mode`, made as strict as the ceiling requires for `tool`. */
export function clampToCeiling(mode: ApprovalMode, tool: string, ceiling: ApprovalCeiling | undefined): ApprovalMode {
  return ceiling ? stricter(mode, ceilingOf(ceiling, tool)) : mode;
}

/**
 * Parses `tool=mode,...` (and `*=mode` for every other tool), e.g. `shell=ask,write_file=ask`.
 * A tool (or `*`) named twice is refused: no entry silently overrides another. Tool names are
 * checked against the catalogue elsewhere (see unknownCeilingTools).
 */
export function parseApprovalCeiling(raw: string): { ok: true; value: ApprovalCeiling } | { ok: false; error: string } {
  // No prototype: a name such as `__proto__` is an entry like any other (refused as no tool).
  const ceiling: ApprovalCeiling = { tools: Object.create(null) };
  for (const entry of raw.split(",").map((s) => s.trim())) {
    if (entry === "") continue;
    const [name, mode, ...rest] = entry.split("=").map((s) => s.trim());
    const parsed = ApprovalModeSchema.safeParse(mode);
    if (!name || rest.length || !parsed.success) {
      return { ok: false, error: `${JSON.stringify(entry)} is not tool=allow|ask|deny (or *=allow|ask|deny)` };
    }
    if (name === "*" ? ceiling.default !== undefined : name in ceiling.tools) {
      return { ok: false, error: `${JSON.stringify(name)} is named twice: give each tool (and *) one mode` };
    }
    if (name === "*") ceiling.default = parsed.data;
    else ceiling.tools[name] = parsed.data;
  }
  return { ok: true, value: ceiling };
}

/** The ceiling's tool names that are not tools (a misspelt name would cap nothing). */
export function unknownCeilingTools(ceiling: ApprovalCeiling, toolNames: readonly string[]): string[] {
  return Object.keys(ceiling.tools).filter((name) => !toolNames.includes(name));
}

/**
 * The tools for which `policy` (a session's, or a run's over its session's `under`) asks for
 * a looser mode than the ceiling, each with the loosest mode allowed. A per-tool setting is
 * checked as written; the policy's `default` for every tool it applies to, i.e. each tool
 * neither it nor `under` names in `tools` (so `{default: "allow"}` under `shell=ask` names
 * `shell`, and `{default: "allow", tools: {shell: "ask"}}` passes).
 */
export function looserThanCeiling({
  policy,
  under,
  toolNames,
  ceiling,
}: {
  policy: ApprovalPolicy | null | undefined;
  under?: ApprovalPolicy | null;
  toolNames: readonly string[];
  ceiling: ApprovalCeiling | undefined;
}): Record<string, ApprovalMode> {
  const looser: Record<string, ApprovalMode> = {};
  if (!policy || !ceiling) return looser;
  for (const tool of toolNames) {
    const asked = policy.tools?.[tool] ?? (under?.tools?.[tool] === undefined ? policy.default : undefined);
    const max = ceilingOf(ceiling, tool);
    if (asked !== undefined && RANK[asked] < RANK[max]) looser[tool] = max;
  }
  return looser;
}
