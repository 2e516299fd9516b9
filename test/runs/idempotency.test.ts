import { describe, expect, it } from "vitest";
import { differingFields } from "../../src/runs/idempotency.js";
import { runRecord } from "../helpers/seed.js";

const run = runRecord({
  id: "run_1",
  sessionId: "ses_1",
  maxTurns: 20,
  approval: { default: "ask", tools: { shell: "deny", write_file: "allow" } },
  idempotencyKey: "k",
});

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
    expect(differingFields(run, { input: "ho", maxTurns: 20, approval: run.approval ?? undefined })).toEqual(["input"]);
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
