import { describe, expect, it } from "vitest";
import { StreamAssembler } from "../../src/model/stream-assembler.js";

const assembler = () => new StreamAssembler({ startedAt: 0, now: () => 0 });
const chunkWith = (content: unknown) => ({ choices: [{ index: 0, delta: { content } }] });

describe("content parts in a stream chunk", () => {
  it("a thinking part is reasoning, its text parts in order", () => {
    const reply = assembler();
    const content = [
      { type: "thinking", thinking: [{ type: "text", text: "hm" }, "m"] },
      { type: "text", text: "ok" },
    ];
    expect(reply.accept(chunkWith(content))).toEqual({ ok: true });
    const done = reply.finish();
    expect(done.ok && [done.value.reasoning, done.value.text]).toEqual(["hmm", "ok"]);
  });

  it("thinking nested in thinking, 200,000 deep (as a hostile upstream can send), is a bad response, not a stack overflow", () => {
    let content: unknown = [{ type: "text", text: "deep" }];
    for (let i = 0; i < 200_000; i++) content = [{ type: "thinking", thinking: content }];
    const result = assembler().accept(chunkWith(content));
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining("`content`") });
  });

  it("a tool-call field nested 5,000 deep is a bad response, not a stack overflow; 64 levels pass", () => {
    const nested = (depth: number) => {
      let value: unknown = "leaf";
      for (let i = 0; i < depth; i++) value = { v: value };
      return value;
    };
    const fragment = (depth: number) => ({
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, id: "c1", function: { name: "ls", arguments: "{}" }, x: nested(depth) }] },
        },
      ],
    });
    expect(assembler().accept(fragment(5_000))).toMatchObject({
      ok: false,
      message: expect.stringContaining("nested"),
    });
    expect(assembler().accept(fragment(63))).toEqual({ ok: true });
  });
});
