import { describe, expect, it } from "vitest";
import { ChatBody, chatAction } from "../../src/chat/chat-request.js";

const answered = (id: string, approved: boolean) => ({
  type: "tool-shell",
  state: "approval-responded",
  approval: { id, approved },
});

describe("a chat request's decisions", () => {
  it("a part repeated 9,000 times in one body is one decision; different calls stay apart; one call both approved and denied is refused", () => {
    const parts = [...Array.from({ length: 9_000 }, () => answered("call_1", true)), answered("call_2", false)];
    const body = ChatBody.parse({ messages: [{ role: "assistant", parts }] });
    expect(chatAction(body)).toEqual({
      kind: "decide",
      decisions: [
        { toolCallId: "call_1", decision: "approve" },
        { toolCallId: "call_2", decision: "deny" },
      ],
    });
    const both = ChatBody.parse({
      messages: [{ role: "assistant", parts: [answered("c", true), answered("c", false)] }],
    });
    expect(() => chatAction(both)).toThrow(
      expect.objectContaining({ status: 400, code: "CONTRADICTORY_APPROVALS", details: { toolCallId: "c" } }),
    );
  });
});
