/**
 * Characters that are invisible or reorder what follows them: bidirectional controls
 * (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069) and zero-width ones (U+200B-U+200D,
 * U+2060-U+2064, U+FEFF). Shown in an approval, they could make a command read otherwise
 * than it runs ("Trojan source").
 */
const INVISIBLE = /^[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]$/;

/**
 * Text from the model or a tool made safe for a terminal: control characters (which
 * could move the cursor, retitle the window or hide what follows) and invisible or
 * reordering ones (INVISIBLE) are shown as `\uXXXX`. `keepLines` leaves newlines and tabs
 * as they are.
 */
export function printable(text: string, { keepLines = false }: { keepLines?: boolean } = {}): string {
  let result = "";
  for (const c of text) {
    const code = c.charCodeAt(0);
    const control = code < 0x20 || (code >= 0x7f && code <= 0x9f) || INVISIBLE.test(c);
    const kept = keepLines && (c === "\n" || c === "\t");
    result += control && !kept ? escaped(c) : c;
  }
  return result;
}

/** A character of the Basic Multilingual Plane as its `\\uXXXX` escape (the same in JSON). */
const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

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
