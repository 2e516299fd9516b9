import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redactDetail, secretRedactor } from "../../src/model/redact.js";

/** Whether any base64 or base64url run in `text`, decoded at any alignment, holds `secret`. */
function base64Reveals(text: string, secret: string): boolean {
  for (const run of text.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []) {
    for (let shift = 0; shift < 4; shift++) {
      const decoded = Buffer.from(run.slice(shift).replaceAll("-", "+").replaceAll("_", "/"), "base64");
      if (decoded.includes(Buffer.from(secret))) return true;
    }
  }
  return false;
}

const keyChars = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.");
const key = fc.string({ unit: keyChars, minLength: 16, maxLength: 48 });
const around = fc.string({ maxLength: 20 });

describe("secret redaction", () => {
  it("no encoding of a key survives: as written, any case, %-encoded, inside base64 or base64url at any offset", () => {
    fc.assert(
      fc.property(key, around, around, (secret, before, after) => {
        const redact = secretRedactor([secret]);
        const inside = Buffer.from(`${before}${secret}${after}`);
        const text = [
          secret,
          secret.toUpperCase(),
          encodeURIComponent(secret),
          [...secret].map((c) => `%${c.charCodeAt(0).toString(16)}`).join(""),
          inside.toString("base64"),
          inside.toString("base64url"),
          encodeURIComponent(inside.toString("base64")),
        ].join(" | ");
        const out = redact(text);
        expect(out.toLowerCase()).not.toContain(secret.toLowerCase());
        // Every %-sequence went with its key: what is left decodes, and reveals nothing.
        const decoded = decodeURIComponent(out);
        expect(decoded).not.toContain(secret);
        expect(base64Reveals(decoded, secret)).toBe(false);
      }),
      { numRuns: 100 },
    );
  });

  it("a key of any visible ASCII characters survives no JSON escape ('\"', '\\\\', '\\/', '\\u00XX') nor %-encoding", () => {
    // A key holding " or \\ in a request's URL reached the log line as pino writes it: \\" and \\\\.
    const visible = fc.constantFrom(...Array.from({ length: 94 }, (_, i) => String.fromCharCode(0x21 + i)));
    fc.assert(
      fc.property(fc.string({ unit: visible, minLength: 16, maxLength: 40 }), around, (secret, before) => {
        const redact = secretRedactor([secret]);
        const unicodeEscaped = [...secret].map((c) => `\\u00${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
        const forms = [
          JSON.stringify(`${before}${secret}`),
          JSON.stringify(secret).replaceAll("/", "\\/"),
          unicodeEscaped,
        ];
        for (const form of forms) {
          const out = redact(form);
          expect(out, form).toContain("[redacted]");
          expect(JSON.stringify(out)).not.toContain(JSON.stringify(secret).slice(1, -1));
        }
        expect(redact(encodeURIComponent(secret))).toBe("[redacted]");
      }),
      { numRuns: 200 },
    );
  });

  it("a secret with characters beyond ASCII (an upstream's key) is redacted %-encoded as its UTF-8 bytes too", () => {
    const redact = secretRedactor(["clé-secrète-du-locataire-0123"]);
    expect(redact(`/sessions?k=${encodeURIComponent("clé-secrète-du-locataire-0123")}`)).toBe("/sessions?k=[redacted]");
    expect(redact("/sessions?k=clé-secrète-du-locataire-0123")).toBe("/sessions?k=[redacted]");
  });

  it("leaves text without the key as it is; a short key is redacted only as written", () => {
    const redact = secretRedactor(["key-a-0123456789abcdef"]);
    expect(redact("nothing secret here: aGVsbG8gd29ybGQ=")).toBe("nothing secret here: aGVsbG8gd29ybGQ=");
    expect(secretRedactor(["abc"])("abc and YWJj")).toBe("[redacted] and YWJj");
    expect(secretRedactor([])("x")).toBe("x");
    expect(redactDetail("Incorrect key SK-TEST-SECRET-KEY-123", secretRedactor(["sk-test-secret-key-123"]))).toBe(
      "Incorrect key [redacted]",
    );
  });
});
