import { describe, expect, it } from "vitest";
import {
  clampToCeiling,
  looserThanCeiling,
  parseApprovalCeiling,
  unknownCeilingTools,
} from "../../src/domain/approval-ceiling.js";

const toolNames = ["read_file", "write_file", "shell"];
const ceiling = (raw: string) => {
  const parsed = parseApprovalCeiling(raw);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
};

describe("the approval ceiling", () => {
  it("parses tool=mode pairs and *=mode; anything else names the entry", () => {
    expect(ceiling(" shell=ask , *=deny ")).toEqual({ default: "deny", tools: { shell: "ask" } });
    for (const bad of ["shell", "shell=", "shell=maybe", "=ask", "shell=ask=deny"]) {
      expect(parseApprovalCeiling(bad), bad).toEqual({
        ok: false,
        error: expect.stringContaining(JSON.stringify(bad)),
      });
    }
  });

  it("an entry named __proto__ (or constructor) is kept, and refused at start as no tool, not silently dropped", () => {
    // Set on a plain object, `__proto__=deny` vanished: not refused, not kept, capping nothing.
    const parsed = parseApprovalCeiling("__proto__=deny,constructor=ask,shell=ask");
    if (!parsed.ok) throw new Error(parsed.error);
    expect(unknownCeilingTools(parsed.value, ["shell", "read_file"])).toEqual(["__proto__", "constructor"]);
    expect(clampToCeiling("allow", "read_file", parsed.value)).toBe("allow");
  });

  it("clamps a mode to the ceiling, never loosens one", () => {
    const max = ceiling("shell=ask,*=allow");
    expect(clampToCeiling("allow", "shell", max)).toBe("ask");
    expect(clampToCeiling("deny", "shell", max)).toBe("deny");
    expect(clampToCeiling("allow", "read_file", max)).toBe("allow");
    expect(clampToCeiling("allow", "read_file", ceiling("*=deny"))).toBe("deny");
    expect(clampToCeiling("allow", "shell", undefined)).toBe("allow");
  });

  it("a run's default counts only for tools neither it nor its session names", () => {
    const max = ceiling("shell=ask");
    // The session pins shell, so the run's default does not reach it.
    expect(
      looserThanCeiling({ policy: { default: "allow" }, under: { tools: { shell: "deny" } }, toolNames, ceiling: max }),
    ).toEqual({});
    expect(looserThanCeiling({ policy: { default: "allow" }, under: null, toolNames, ceiling: max })).toEqual({
      shell: "ask",
    });
    // A run's own tools entry is checked even when the session names the tool.
    expect(
      looserThanCeiling({
        policy: { tools: { shell: "allow" } },
        under: { tools: { shell: "deny" } },
        toolNames,
        ceiling: max,
      }),
    ).toEqual({ shell: "ask" });
    expect(looserThanCeiling({ policy: { default: "deny" }, toolNames, ceiling: ceiling("*=ask") })).toEqual({});
  });
});
