import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { StepTrace } from "../../src/agent/step-trace.js";
import { toolOk } from "../../src/agent/tool.js";
import { toolCall } from "../fakes/scripted-model.js";
import { Harness, testTool } from "./harness.js";

const reader = testTool<{ path: string }>({
  name: "read_file",
  readOnly: true,
  schema: z.object({ path: z.string() }),
  execute: async ({ path }) => toolOk(`1\tcontents of ${path} `.padEnd(200, ".")),
});
const searcher = testTool<{ pattern: string }>({
  name: "search_files",
  readOnly: true,
  schema: z.object({ pattern: z.string() }),
  execute: async () => ({
    ok: true,
    output: "src/a.ts:3: const x = 1\nlib/b c.ts:10: x()\nno matches here",
    files: ["src/a.ts", "lib/b c.ts"],
  }),
});

describe("the step trace", () => {
  it("lists the files whose content was sent (inside the trimmed window only) and each call's fingerprint", async () => {
    const steps: StepTrace[] = [];
    const h = new Harness({
      tools: [reader, searcher],
      steps: [
        { toolCalls: [toolCall("r1", "read_file", { path: "old.md" })] },
        {
          toolCalls: [
            toolCall("s1", "search_files", { pattern: "x" }),
            toolCall("r2", "read_file", { path: "new.md" }),
          ],
        },
        { toolCalls: [toolCall("r3", "read_file", { path: "new.md" })] },
        { text: "done" },
      ],
    });
    // Room for three turns' units: the fourth request leaves the first turn out.
    await h.run({ contextMaxChars: 600, onStep: (step) => steps.push(structuredClone(step)) });
    // A turn with calls is reported before its tools and with their results: its last report counts.
    const final = [...new Map(steps.map((s) => [s.turn, s])).values()];
    expect(final.map((s) => s.context.includedFiles)).toEqual([
      [],
      ["old.md"],
      ["old.md", "src/a.ts", "lib/b c.ts", "new.md"],
      // The first turn's read was trimmed from what the fourth request sent.
      ["src/a.ts", "lib/b c.ts", "new.md"],
    ]);
    expect(final[3]?.context.trimmedCount).toBeGreaterThan(0);
    const [r2] = final[1]?.tools.filter((t) => t.toolCallId === "r2") ?? [];
    const [r3] = final[2]?.tools ?? [];
    expect(r2?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(r3?.fingerprint).toBe(r2?.fingerprint);
    expect(final[1]?.tools[0]?.fingerprint).not.toBe(r2?.fingerprint);
  });
});
