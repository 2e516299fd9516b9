import { afterEach, describe, expect, it } from "vitest";
import { type Harness, harness, sse } from "./raw-harness.js";

/**
 * SseParser says it parses "as the SSE spec says"; the spec (HTML, 9.2.6) strips one leading
 * U+FEFF BOM from the stream. Servers writing through a UTF-8 encoder that emits a preamble
 * (e.g. .NET's `new StreamWriter(stream, Encoding.UTF8)`) start the body with it. Today the
 * first line becomes the unknown field "\uFEFFdata", the first chunk is lost, and a reply sent
 * in one chunk fails MODEL_BAD_RESPONSE "answered without any stream chunks".
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("an event stream that begins with a UTF-8 byte order mark", () => {
  it("is read whole: the first chunk is not lost", async () => {
    const [first, ...rest] = sse([
      { choices: [{ index: 0, delta: { role: "assistant", content: "Hello" }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: " there" }, finish_reason: "stop" }] },
    ]);
    h = await harness([{ writes: [`\uFEFF${first}`, ...rest] }]);
    const { run, text } = await h.run();
    expect(run.error).toBeNull();
    expect(text).toBe("Hello there");
  });
});
