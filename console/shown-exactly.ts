/**
 * What would not show as itself: format characters (\p{Cf}: bidirectional controls, zero-width
 * characters, the soft hyphen, Unicode tag characters, ...), control characters but tab and
 * newline, variation selectors, the combining grapheme joiner, Hangul fillers, and the
 * unassigned code points of those blocks (U+2065, the tag block U+E0000–E007F), which render
 * as nothing or may one day.
 */
const UNSEEN =
  /\p{Cf}|\p{Cc}|\u034f|[\ufe00-\ufe0f]|[\u{e0100}-\u{e01ef}]|[\u115f\u1160\u180e\u2065\u3164\uffa0\u{e0000}-\u{e007f}]/gu;
const KEPT = new Set(["\t", "\n"]);

/**
 * Text as it is, with every character that would not show as itself (which could make a
 * command read otherwise than it runs, or hide words in it) written as an escape: `\uXXXX`,
 * or `\u{XXXXX}` past U+FFFF. Tab and newline stay.
 */
export function shownExactly(text: string): string {
  return text.replace(UNSEEN, (c) => {
    if (KEPT.has(c)) return c;
    const code = c.codePointAt(0) as number;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}
