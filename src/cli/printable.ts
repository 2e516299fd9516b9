/**
 * What would not show as itself on a terminal, or would change what follows: the control
 * characters (which could move the cursor, retitle the window or hide what follows: C0, DEL
 * and C1) and every format character (bidirectional controls, zero-width ones, the soft
 * hyphen, the tag characters U+E0000-E007F that carry hidden ASCII text).
 */
const UNSEEN = /^(?:\p{Cc}|\p{Cf})$/u;
/**
 * UNSEEN and every other default-ignorable code point (variation selectors, fillers...): what
 * an approval shows, so that what is approved is exactly what is read.
 */
const UNSEEN_EXACT = /^(?:\p{Cc}|\p{Cf}|\p{Default_Ignorable_Code_Point})$/u;

/**
 * Text from the model or a tool made safe for a terminal: what would not show as itself
 * (UNSEEN; with `exact`, UNSEEN_EXACT) is written as `\uXXXX` (`\u{XXXXX}` past U+FFFF), so
 * that it can neither hide text nor make a command read otherwise than it runs ("Trojan
 * source"). An answer keeps its emoji's variation selectors; an approval's arguments do not.
 * `keepLines` leaves newlines and tabs as they are.
 */
export function printable(
  text: string,
  { keepLines = false, exact = false }: { keepLines?: boolean; exact?: boolean } = {},
): string {
  const unseen = exact ? UNSEEN_EXACT : UNSEEN;
  let result = "";
  for (const c of text) {
    const kept = keepLines && (c === "\n" || c === "\t");
    result += !kept && unseen.test(c) ? escaped(c) : c;
  }
  return result;
}

/** A character as its `\\uXXXX` escape (the same in JSON), or `\\u{XXXXX}` past U+FFFF. */
const escaped = (c: string): string => {
  const code = c.codePointAt(0) as number;
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
};

const NEWLINE = 0x0a;

/**
 * The first line of `text`, cut to `max` characters, saying how many lines were left out
 * (trailing newlines not counted). The text is the model's or a tool's: it is scanned once,
 * in time linear in its length, and not copied (no regex that backtracks, no split).
 */
export function preview(text: string, max = 160): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === NEWLINE) end--;
  const firstEnd = text.indexOf("\n");
  const first = text.slice(0, Math.min(firstEnd === -1 ? end : firstEnd, end, max + 1));
  const cut = first.length > max ? `${first.slice(0, max)}...` : first;
  let more = 0;
  for (let at = firstEnd; at !== -1 && at < end; at = text.indexOf("\n", at + 1)) more++;
  return printable(more > 0 ? `${cut} (+${more} line${more === 1 ? "" : "s"})` : cut);
}

/**
 * A line of JSON made safe for a terminal without changing what it means: JSON escapes C0
 * controls itself, but not DEL and the C1 controls (U+007F-U+009F), which terminals reading
 * C1 controls in UTF-8 take as CSI, OSC... They can only stand inside JSON strings, where
 * `\u00XX` is the same character.
 */
export function printableJson(json: string): string {
  return json.replace(/[\u007f-\u009f]/g, escaped);
}
