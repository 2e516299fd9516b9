import { describe, expect, it } from "vitest";
import { SHELL_OUTPUT_HEAD_BYTES, SHELL_OUTPUT_TAIL_BYTES, shellTool } from "../../src/tools/shell.js";
import { expectOk, makeSandbox, runTool } from "./helpers.js";

describe("shell: output cut to its head and tail", () => {
  it("keeps every character of valid UTF-8 output whole at the cut (no U+FFFD made by the cut)", async () => {
    const { workspace } = await makeSandbox();
    // "€" is 3 bytes in UTF-8; 8 KiB (the head) is not a multiple of 3, so a byte cut at
    // exactly 8192 bytes falls inside a character.
    expect(SHELL_OUTPUT_HEAD_BYTES % 3).not.toBe(0);
    const count = Math.ceil((2 * (SHELL_OUTPUT_HEAD_BYTES + SHELL_OUTPUT_TAIL_BYTES)) / 3);
    const outcome = await runTool(shellTool, workspace, {
      command: `i=0; while [ $i -lt ${count} ]; do printf '\\342\\202\\254'; i=$((i+1)); done`,
    });
    const output = expectOk(outcome);
    expect(outcome).toMatchObject({ truncated: true });
    expect(output).toMatch(/output cut/);
    // The command wrote only "€": any replacement character was made by cutting one in two.
    // (Booleans: a diff of 30 KiB of "€" says nothing more.)
    expect(output.includes("\ufffd"), "a replacement character where the cut fell inside a character").toBe(false);
    const [head, rest] = output.split("\n[... output cut");
    expect(/^€+$/.test(head ?? ""), "the head is whole characters").toBe(true);
    const tail = (rest ?? "").split("...]\n")[1]?.replace(/\n\[exit code 0\]$/, "");
    expect(/^€+$/.test(tail ?? ""), "the tail is whole characters").toBe(true);
  });
});
