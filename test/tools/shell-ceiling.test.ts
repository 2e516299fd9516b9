import { expect, it } from "vitest";
import { UNSANDBOXED } from "../../src/tools/sandbox.js";
import { ceilingInForce, UNSANDBOXED_KEYS_CEILING } from "../../src/tools/shell-ceiling.js";

const bwrap = {
  kind: "bwrap" as const,
  bwrap: "/usr/bin/bwrap",
  network: false,
  tmpBytes: 1,
  maxProcesses: 1,
  options: { disableUserns: false },
};

it("shell is denied only when it runs unsandboxed between several keys and the operator's ceiling does not name it", () => {
  const configured = { tools: { shell: "ask" as const } };
  expect(ceilingInForce({ configured: undefined, sandbox: UNSANDBOXED, keyCount: 2 })).toEqual({
    ceiling: UNSANDBOXED_KEYS_CEILING,
    shellDenied: true,
  });
  // A ceiling set for other tools keeps them and adds shell=deny.
  expect(ceilingInForce({ configured: { tools: { write_file: "ask" } }, sandbox: UNSANDBOXED, keyCount: 2 })).toEqual({
    ceiling: { tools: { write_file: "ask", shell: "deny" } },
    shellDenied: true,
  });
  const everyTool = { default: "ask" as const, tools: { write_file: "deny" as const } };
  for (const [given, expected] of [
    [{ configured, sandbox: UNSANDBOXED, keyCount: 2 }, configured],
    [{ configured: everyTool, sandbox: UNSANDBOXED, keyCount: 2 }, everyTool],
    [
      { configured: { tools: { write_file: "ask" as const } }, sandbox: UNSANDBOXED, keyCount: 1 },
      { tools: { write_file: "ask" } },
    ],
    [{ configured: undefined, sandbox: UNSANDBOXED, keyCount: 1 }, undefined],
    [{ configured: undefined, sandbox: UNSANDBOXED, keyCount: 0 }, undefined],
    [{ configured: undefined, sandbox: bwrap, keyCount: 5 }, undefined],
  ] as const) {
    expect(ceilingInForce(given)).toEqual({ ceiling: expected, shellDenied: false });
  }
});
