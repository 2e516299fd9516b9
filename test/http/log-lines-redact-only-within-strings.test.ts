/**
 * Secrets are redacted from a log line within its JSON strings only, so every line stays valid
 * JSON with its numbers intact; a secret shorter than 8 characters only as a whole word.
 */
import { expect, it } from "vitest";
import { logLineRedactor } from "../../src/log-line-redact.js";

const line = (fields: Record<string, unknown>) => `${JSON.stringify(fields)}\n`;

it("a one-character secret leaves numbers, field names and words holding it, and is redacted as a word", () => {
  const redact = logLineRedactor(["1", "p"]);
  const original = line({
    level: 30,
    time: 1796682540165,
    pid: 12341,
    url: "http://127.0.0.1:31576",
    reqId: "req_01m9",
  });
  expect(redact(original)).toBe(original.replace("127.0.0.1:", "127.0.0.[redacted]:"));
  expect(JSON.parse(redact(line({ msg: "key 1 and p", n: 1 })))).toEqual({
    msg: "key [redacted] and [redacted]",
    n: 1,
  });
});

it("a secret right after an escape is redacted without leaving a broken escape", () => {
  const secret = "nightly-build-key-0123";
  const redact = logLineRedactor([secret]);
  for (const text of [`a\n${secret}`, `a\\${secret}`, `\t${secret}\n`, `${secret}\u001b`, `"${secret}"`]) {
    const out = redact(line({ msg: text, n: 7 }));
    const parsed = JSON.parse(out);
    expect(parsed.n).toBe(7);
    expect(out).not.toContain(secret);
    expect(parsed.msg).toContain("[redacted]");
  }
});

it("a line without a secret is returned as it is", () => {
  const original = line({ level: 30, msg: "nothing here" });
  expect(logLineRedactor(["key-a-0123456789abcdef"])(original)).toBe(original);
});
