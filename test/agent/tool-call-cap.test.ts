import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/messages.js";
import { overToolCallCap, placeInReply, TOO_MANY_TOOL_CALLS } from "../../src/agent/tool-call-cap.js";

const call = (id: string) => ({ id, name: "list_files", input: "{}" });

describe("the tool-call cap", () => {
  it("lets the first `max` calls of a reply go on and gives the others a result naming the cap", () => {
    expect(overToolCallCap({ position: 1, count: 5, max: 2 })).toBeNull();
    expect(overToolCallCap({ position: 2, count: 5, max: 2 })).toMatchObject({
      ok: false,
      errorCode: TOO_MANY_TOOL_CALLS,
      message: expect.stringContaining("made 5 tool calls and at most 2"),
    });
    expect(overToolCallCap({ position: 63, count: 100 })).toBeNull();
    expect(overToolCallCap({ position: 64, count: 100 })).not.toBeNull();
  });

  it("a resumed run's pending calls keep their place in the reply: the cap is not reset", () => {
    const calls = ["a", "b", "c", "d"].map(call);
    const history: AgentMessage[] = [
      { id: "m1", role: "user", content: "go" },
      { id: "m2", role: "assistant", content: "", toolCalls: calls },
      { id: "m3", role: "tool", toolCallId: "a", content: "ok", isError: false, metadata: {} as never },
    ];
    expect(placeInReply(history, calls.slice(1))).toEqual({ offset: 1, count: 4 });
    expect(placeInReply(history, calls)).toEqual({ offset: 0, count: 4 });
  });
});
