import { describe, expect, it } from "vitest";
import { differingFields } from "../../src/runs/idempotency.js";
import { defaultRunLimits } from "../../src/store/runs.js";

/** The keyed run as the store compares it with a request of input "hi". */
const keyed = (input: string) => ({
  id: "run_1",
  sameInput: input === "hi",
  maxTurns: 20,
  contextMaxChars: null,
  approval: { default: "ask" as const, tools: { shell: "deny" as const, write_file: "allow" as const } },
  ...defaultRunLimits(),
});
const run = keyed("hi");

describe("an Idempotency-Key retry is the same request only if its whole body is", () => {
  it("the same body, with the approval's keys in another order, is the same request", () => {
    expect(
      differingFields(run, {
        input: "hi",
        maxTurns: 20,
        approval: { tools: { write_file: "allow", shell: "deny" }, default: "ask" },
      }),
    ).toEqual([]);
  });

  it("names each field that differs", () => {
    expect(differingFields(keyed("ho"), { input: "ho", maxTurns: 20, approval: run.approval })).toEqual(["input"]);
    expect(differingFields(run, { input: "hi", maxTurns: 5, contextMaxChars: 100, approval: undefined })).toEqual([
      "maxTurns",
      "contextMaxChars",
      "approval",
    ]);
    expect(
      differingFields(run, { input: "hi", maxTurns: 20, approval: { default: "ask", tools: { shell: "allow" } } }),
    ).toEqual(["approval"]);
  });
});
