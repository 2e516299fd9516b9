import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { secretRedactor } from "../../src/model/redact.js";

/**
 * Keys of one naming scheme (`team-alpha-2024-<random>`) share a prefix at least half as long
 * as each, so each key's cut-short pattern matches the start of the others: the redactor must
 * still replace the longest encoding where one begins, not the first that matches. `~`, `?` and
 * `>` make a key's base64 and base64url differ (`+`/`-`, `/`/`_`) after a shared start, the
 * same case within one key.
 */
const keyChars = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~?>");
const prefix = fc.string({ unit: keyChars, minLength: 8, maxLength: 24 });
/** Tails that differ from their first character on: what tells the keys apart. */
const tails = fc.uniqueArray(fc.string({ unit: keyChars, minLength: 8, maxLength: 16 }), {
  minLength: 2,
  maxLength: 4,
  selector: (tail) => tail[0],
});
const around = fc.string({ maxLength: 12 });

/** The textual forms of a key (or of a key cut short): each must be replaced whole. */
const TEXT_FORMS: Record<string, (text: string) => string> = {
  "as written": (text) => text,
  "upper case": (text) => text.toUpperCase(),
  "lower case": (text) => text.toLowerCase(),
  "%-encoded where needed": (text) => encodeURIComponent(text),
  "%-encoded wholly": (text) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join(""),
  "JSON \\u00XX escapes": (text) =>
    [...text].map((c) => `\\u00${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join(""),
};

/** Whether a base64 or base64url run in `text`, decoded at any alignment, holds any 5 characters in a row of `tail`. */
function base64RevealsPartOf(text: string, tail: string): boolean {
  const windows = Array.from({ length: tail.length - 4 }, (_, i) => Buffer.from(tail.slice(i, i + 5)));
  for (const run of text.match(/[A-Za-z0-9+/_-]{4,}/g) ?? []) {
    for (let shift = 0; shift < 4; shift++) {
      const decoded = Buffer.from(run.slice(shift).replaceAll("-", "+").replaceAll("_", "/"), "base64");
      if (windows.some((window) => decoded.includes(window))) return true;
    }
  }
  return false;
}

describe("secrets sharing a prefix", () => {
  it("are each replaced whole, as written, in any case, %-encoded or JSON-escaped, whole or cut short", () => {
    fc.assert(
      fc.property(prefix, tails, fc.nat(), fc.nat(), (start, ends, pick, cut) => {
        const keys = ends.map((end) => `${start}${end}`);
        const redact = secretRedactor(keys);
        const key = keys[pick % keys.length] as string;
        const shortest = Math.max(8, Math.ceil(key.length / 2));
        const shown = key.slice(0, shortest + (cut % (key.length - shortest + 1)));
        for (const [form, encode] of Object.entries(TEXT_FORMS)) {
          expect(redact(`say ${encode(key)} end`), `${form} of ${key}`).toBe("say [redacted] end");
          expect(redact(`say ${encode(shown)} end`), `${form} of ${shown}, cut short`).toBe("say [redacted] end");
        }
      }),
      { numRuns: 60 },
    );
  });

  it("show none of what tells them apart inside base64 or base64url, whole or cut short", () => {
    fc.assert(
      fc.property(prefix, tails, fc.nat(), around, around, (start, ends, pick, before, after) => {
        const keys = ends.map((end) => `${start}${end}`);
        const redact = secretRedactor(keys);
        const index = pick % keys.length;
        const key = keys[index] as string;
        const tail = ends[index] as string;
        for (const text of [`${before}${key}${after}`, `Bearer ${key}`, `${before}${key}`]) {
          for (const encoding of ["base64", "base64url"] as const) {
            const encoded = Buffer.from(text).toString(encoding);
            const out = redact(`say ${encoded} end`);
            expect(out, `${encoded}: ${encoding} of ${text}`).toContain("[redacted]");
            expect(base64RevealsPartOf(out, tail), `${out}: ${encoding} of ${text}`).toBe(false);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it("the second of two keys of one scheme is replaced whole", () => {
    const redact = secretRedactor(["team-alpha-2024-Qw7rT2xP", "team-alpha-2024-Zk9mV4nL"]);
    expect(redact("Bearer team-alpha-2024-Zk9mV4nL")).toBe("Bearer [redacted]");
    expect(redact("Bearer team-alpha-2024-Qw7rT2xP")).toBe("Bearer [redacted]");
    const basic = Buffer.from("user:team-alpha-2024-Zk9mV4nL").toString("base64");
    expect(redact(basic)).not.toMatch(/\[redacted\][A-Za-z0-9+/]{4}/);
  });

  it("a key's base64url is replaced as far as its base64 would be", () => {
    const key = "secret-key-0123456789>>>>??";
    const redact = secretRedactor([key]);
    const base64 = Buffer.from(key).toString("base64");
    const base64url = Buffer.from(key).toString("base64url");
    expect(base64url).not.toBe(base64);
    expect(redact(`say ${base64} end`)).toBe("say [redacted] end");
    expect(redact(`say ${base64url} end`)).toBe("say [redacted] end");
  });
});
