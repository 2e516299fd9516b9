/**
 * What would not show as itself: every default-ignorable code point (zero-width characters,
 * bidirectional controls, the soft hyphen, variation selectors, the combining grapheme joiner,
 * Hangul fillers, Khmer inherent vowels, Mongolian free variation selectors, U+FFF0–FFF8, the
 * whole tag plane U+E0000–E0FFF, ...: assigned or not, these render as nothing or may one day),
 * every other format character (\p{Cf}), and the control characters but tab and newline.
 */
const UNSEEN = /\p{Default_Ignorable_Code_Point}|\p{Cf}|\p{Cc}/gu;
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
