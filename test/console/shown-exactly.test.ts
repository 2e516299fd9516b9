/** The approval card's and the history's escaping of what would not show as itself (console/shown-exactly.ts). */
import { describe, expect, it } from "vitest";
import { shownExactly } from "../../console/shown-exactly.js";

/** Characters that render as nothing (or as something else) in Chromium, each with its escape. */
const UNSEEN: [string, string][] = [
  ["\u061c", "\\u061c"],
  ["\u200b", "\\u200b"],
  ["\u202e", "\\u202e"],
  ["\u2066", "\\u2066"],
  ["\ufeff", "\\ufeff"],
  ["\u00ad", "\\u00ad"],
  ["\u034f", "\\u034f"],
  ["\u115f", "\\u115f"],
  ["\u1160", "\\u1160"],
  ["\u180e", "\\u180e"],
  ["\u2065", "\\u2065"],
  ["\u206a", "\\u206a"],
  ["\u206f", "\\u206f"],
  ["\u3164", "\\u3164"],
  ["\ufe00", "\\ufe00"],
  ["\ufe0f", "\\ufe0f"],
  ["\uffa0", "\\uffa0"],
  ["\u{e0000}", "\\u{e0000}"],
  ["\u{e0001}", "\\u{e0001}"],
  ["\u{e0041}", "\\u{e0041}"],
  ["\u{e007f}", "\\u{e007f}"],
  ["\u{e0100}", "\\u{e0100}"],
  ["\u{e01ef}", "\\u{e01ef}"],
  ["\u0007", "\\u0007"],
  ["\u001b", "\\u001b"],
  ["\u0085", "\\u0085"],
  // Default-ignorable code points outside \p{Cf} and the variation selectors: these showed as nothing.
  ["\u17b4", "\\u17b4"],
  ["\u17b5", "\\u17b5"],
  ["\u180b", "\\u180b"],
  ["\u180d", "\\u180d"],
  ["\u180f", "\\u180f"],
  ["\ufff0", "\\ufff0"],
  ["\ufff8", "\\ufff8"],
  ["\u{e0080}", "\\u{e0080}"],
  ["\u{e00ff}", "\\u{e00ff}"],
  ["\u{e01f0}", "\\u{e01f0}"],
  ["\u{e0fff}", "\\u{e0fff}"],
  // Format characters that are not default-ignorable but are no text of their own.
  ["\u0600", "\\u0600"],
  ["\ufff9", "\\ufff9"],
];

describe("shownExactly", () => {
  it.each(UNSEEN)("writes %j as %s", (char, written) => {
    expect(shownExactly(`a${char}b`)).toBe(`a${written}b`);
  });

  it("shows ASCII smuggled in tag characters as escapes, one for each", () => {
    const smuggled = [..." rm -rf ~"].map((c) => String.fromCodePoint(0xe0000 + (c.codePointAt(0) as number))).join("");
    const shown = shownExactly(`echo hello${smuggled}`);
    expect(shown).toBe(`echo hello${[..." rm -rf ~"].map((c) => `\\u{e00${c.charCodeAt(0).toString(16)}}`).join("")}`);
  });

  it("writes every default-ignorable code point, format character and control but tab and newline as an escape", () => {
    const unseen = /^(?:\p{Default_Ignorable_Code_Point}|\p{Cf}|\p{Cc})$/u;
    const shownAsThemselves: string[] = [];
    for (let code = 0; code <= 0x10ffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const c = String.fromCodePoint(code);
      if (c === "\t" || c === "\n" || !unseen.test(c)) continue;
      if (shownExactly(c) === c) shownAsThemselves.push(code.toString(16));
    }
    expect(shownAsThemselves).toEqual([]);
  });

  it("leaves what shows as itself as it is: text in any script, emoji, tabs and newlines", () => {
    const text = 'ls -la\t"/tmp"\nécrire 日本語 עברית 👍 😀';
    expect(shownExactly(text)).toBe(text);
  });
});
