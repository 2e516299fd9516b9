import { describe, expect, it } from "vitest";
import { MAX_REASONING_DETAILS, ReasoningDetailsFold } from "../../src/model/reasoning-details.js";
import { StreamAssembler } from "../../src/model/stream-assembler.js";

describe("folding OpenRouter's reasoning_details fragments", () => {
  it("joins the text, summary and data of fragments sharing a type and an index, in order; later fields replace earlier ones", () => {
    const fold = new ReasoningDetailsFold();
    for (const fragment of [
      { type: "reasoning.text", text: "first ", format: "f1", index: 0 },
      { type: "reasoning.encrypted", data: "ab", id: "call_1", index: 1 },
      { type: "reasoning.text", text: "second", signature: "sig", index: 0 },
      { type: "reasoning.encrypted", data: "cd", index: 1 },
      { type: "reasoning.summary", summary: "S", index: 0 },
      { type: "reasoning.summary", summary: null, format: "f2", index: 0 },
    ]) {
      expect(fold.add(fragment)).toBe(true);
    }
    expect(fold.blocks).toEqual([
      { type: "reasoning.text", text: "first second", format: "f1", signature: "sig", index: 0 },
      { type: "reasoning.encrypted", data: "abcd", id: "call_1", index: 1 },
      { type: "reasoning.summary", summary: "S", format: "f2", index: 0 },
    ]);
  });

  it("keeps a fragment without a whole-number index, or without a type, as a block of its own", () => {
    const fold = new ReasoningDetailsFold();
    fold.add({ type: "reasoning.encrypted", data: "a" });
    fold.add({ type: "reasoning.encrypted", data: "b" });
    fold.add({ type: "reasoning.text", text: "x", index: 0.5 });
    fold.add({ type: "reasoning.text", text: "y", index: 0.5 });
    fold.add({ text: "z", index: 0 });
    expect(fold.blocks.map((b) => b.data ?? b.text)).toEqual(["a", "b", "x", "y", "z"]);
  });

  it("a `__proto__` field from the upstream stays a plain field and changes no prototype", () => {
    const fold = new ReasoningDetailsFold();
    const hostile = JSON.parse('{"type":"reasoning.text","index":0,"text":"a","__proto__":{"polluted":true}}');
    fold.add(hostile);
    fold.add(JSON.parse('{"type":"reasoning.text","index":0,"text":"b","__proto__":{"again":true}}'));
    const [block] = fold.blocks;
    expect(Object.getPrototypeOf(block)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(block))).toEqual(
      JSON.parse('{"type":"reasoning.text","index":0,"text":"ab","__proto__":{"again":true}}'),
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses a block past the most one reply may carry; fragments of a block already begun still fold", () => {
    const fold = new ReasoningDetailsFold();
    for (let i = 0; i < MAX_REASONING_DETAILS; i++) expect(fold.add({ type: "t", index: i })).toBe(true);
    expect(fold.add({ type: "t", index: MAX_REASONING_DETAILS })).toBe(false);
    expect(fold.add({ type: "t", index: 0, text: "more" })).toBe(true);
    expect(fold.blocks).toHaveLength(MAX_REASONING_DETAILS);
  });
});

describe("reasoning_details in a stream", () => {
  const assembler = (maxOutputChars?: number) => new StreamAssembler({ startedAt: 0, now: () => 1, maxOutputChars });
  const chunk = (reasoning_details: unknown) => ({ choices: [{ index: 0, delta: { reasoning_details } }] });

  it("counts a new block whole, and then only what each fragment adds to it, against the output cap", () => {
    const first = { type: "reasoning.encrypted", data: "x".repeat(100), format: "f", index: 0 };
    const more = { type: "reasoning.encrypted", data: "y".repeat(100), format: "f", index: 0 };
    const size = JSON.stringify(first).length;
    const capped = assembler(size + 200);
    expect(capped.accept(chunk([first]))).toEqual({ ok: true });
    expect(capped.producedChars()).toBe(size);
    // Its data joins the block; its type, index and unchanged format add nothing.
    expect(capped.accept(chunk([more]))).toEqual({ ok: true });
    expect(capped.producedChars()).toBe(size + 100);
    expect(capped.accept(chunk([{ ...more, signature: "s".repeat(98) }]))).toMatchObject({ ok: false, tooLarge: true });
  });

  it("a reasoning streamed a few characters a chunk, as OpenRouter sends it (`reasoning` and its block), counts its text once", () => {
    const piece = "think it ";
    const capped = assembler(100_000);
    const chunks = 10_000;
    for (let i = 0; i < chunks; i++) {
      const delta = {
        reasoning: piece,
        reasoning_details: [{ type: "reasoning.text", text: piece, format: "anthropic-claude-v1", index: 0 }],
      };
      expect(capped.accept({ choices: [{ index: 0, delta }] }), `chunk ${i}`).toEqual({ ok: true });
    }
    // The text once (90,000 characters), and the block's fields once.
    expect(capped.producedChars()).toBeLessThan(chunks * piece.length + 100);
    const done = capped.finish();
    expect(done.ok && done.value.reasoning.length).toBe(chunks * piece.length);
    expect(done.ok && done.value.reasoningDetails).toEqual([
      { type: "reasoning.text", text: piece.repeat(chunks), format: "anthropic-claude-v1", index: 0 },
    ]);
  });

  it("a block's text without a `reasoning` beside it is counted", () => {
    const capped = assembler(1_000);
    const fragment = { type: "reasoning.text", text: "t".repeat(400), index: 0 };
    expect(capped.accept(chunk([fragment]))).toEqual({ ok: true });
    expect(capped.accept(chunk([fragment]))).toEqual({ ok: true });
    expect(capped.accept(chunk([fragment]))).toMatchObject({ ok: false, tooLarge: true });
  });

  it("a malformed reasoning_details is a bad response, never a throw", () => {
    expect(assembler().accept(chunk("text"))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/not an array/),
    });
    expect(assembler().accept(chunk([1]))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/not an object/),
    });
    let deep: unknown = {};
    for (let i = 0; i < 100; i++) deep = { inner: deep };
    expect(assembler().accept(chunk([{ type: "t", index: 0, deep }]))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/nested more than/),
    });
    const fine = assembler();
    expect(fine.accept(chunk(null))).toEqual({ ok: true });
    expect(fine.finish()).toMatchObject({ ok: true, value: { reasoningDetails: [] } });
  });
});
