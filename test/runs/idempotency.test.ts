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
  webhook: null,
});
const noSessionTarget = { webhook: null };
const run = keyed("hi");

describe("an Idempotency-Key retry is the same request only if its whole body is", () => {
  it("the same body, with the approval's keys in another order, is the same request", () => {
    expect(
      differingFields(run, {
        input: "hi",
        maxTurns: 20,
        approval: { tools: { write_file: "allow", shell: "deny" }, default: "ask" },
        session: noSessionTarget,
      }),
    ).toEqual([]);
  });

  it("names each field that differs", () => {
    expect(
      differingFields(keyed("ho"), { input: "ho", maxTurns: 20, approval: run.approval, session: noSessionTarget }),
    ).toEqual(["input"]);
    expect(
      differingFields(run, {
        input: "hi",
        maxTurns: 5,
        contextMaxChars: 100,
        approval: undefined,
        session: noSessionTarget,
      }),
    ).toEqual(["maxTurns", "contextMaxChars", "approval"]);
    expect(
      differingFields(run, {
        input: "hi",
        maxTurns: 20,
        approval: { default: "ask", tools: { shell: "allow" } },
        session: noSessionTarget,
      }),
    ).toEqual(["approval"]);
  });

  it("a webhook target other than the one the run took differs; the server's default changing since does not", () => {
    const target = { url: "https://hooks.example.com/a", events: ["run.finished" as const] };
    const same = { input: "hi", maxTurns: 20, approval: run.approval };
    const own = { ...run, webhook: { ...target, serverDefault: false } };
    const serverDefault = { ...run, webhook: { ...target, serverDefault: true } };
    // The run's own target (or its session's) is compared with the request's own, else its session's.
    expect(differingFields(own, { ...same, webhook: target, session: noSessionTarget })).toEqual([]);
    expect(differingFields(own, { ...same, session: { webhook: target } })).toEqual([]);
    expect(
      differingFields(own, {
        ...same,
        webhook: { ...target, url: "https://hooks.example.com/b" },
        session: noSessionTarget,
      }),
    ).toEqual(["webhook"]);
    expect(
      differingFields(own, { ...same, webhook: { ...target, events: ["run.started"] }, session: noSessionTarget }),
    ).toEqual(["webhook"]);
    expect(differingFields(own, { ...same, session: noSessionTarget })).toEqual(["webhook"]);
    expect(differingFields(run, { ...same, webhook: target, session: noSessionTarget })).toEqual(["webhook"]);
    expect(differingFields(serverDefault, { ...same, webhook: target, session: noSessionTarget })).toEqual(["webhook"]);
    // WEBHOOK_URL's target, or none then: a retry naming none is the same request.
    expect(differingFields(serverDefault, { ...same, session: noSessionTarget })).toEqual([]);
  });

  it("a webhook target stored without saying whether it was the server's matches a retry naming it, or naming none", () => {
    const target = { url: "https://hooks.example.com/a", events: ["run.finished" as const] };
    const same = { input: "hi", maxTurns: 20, approval: run.approval };
    // As a release before the flag stored it: the run's own, its session's or WEBHOOK_URL's.
    const older = { ...run, webhook: target };
    expect(differingFields(older, { ...same, webhook: target, session: noSessionTarget })).toEqual([]);
    expect(differingFields(older, { ...same, session: { webhook: target } })).toEqual([]);
    expect(differingFields(older, { ...same, session: noSessionTarget })).toEqual([]);
    expect(
      differingFields(older, {
        ...same,
        webhook: { ...target, url: "https://hooks.example.com/b" },
        session: noSessionTarget,
      }),
    ).toEqual(["webhook"]);
    expect(differingFields(older, { ...same, session: { webhook: { ...target, events: ["run.started"] } } })).toEqual([
      "webhook",
    ]);
  });

  it("a field the retry leaves to the server's defaults matches whatever its run took; one it sends is compared", () => {
    const limits = { ...defaultRunLimits(), maxTokens: 1000 };
    const first = { ...run, maxTurns: 20, ...limits };
    // The defaults changed since (DEFAULT_MAX_TURNS 30, DEFAULT_MAX_TOKENS 2000): no difference of the request.
    const retried = { input: "hi", approval: run.approval, session: noSessionTarget };
    const changed = { ...retried, maxTurns: 30, limits: { ...limits, maxTokens: 2000 } };
    expect(differingFields(first, { ...changed, defaulted: ["maxTurns", "maxTokens"] })).toEqual([]);
    // Sent: compared with the run's value, whatever the default was.
    expect(differingFields(first, { ...changed, defaulted: ["maxTokens"] })).toEqual(["maxTurns"]);
    expect(differingFields(first, { ...changed, defaulted: [] })).toEqual(["maxTurns", "maxTokens"]);
    expect(differingFields(first, { ...retried, maxTurns: 20, limits, defaulted: [] })).toEqual([]);
  });
});
