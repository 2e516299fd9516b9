/**
 * Characters that could make a shown text read otherwise than it is: the control characters
 * (C0, DEL and C1, General Category Cc), the line and paragraph separators U+2028 and U+2029,
 * and the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A-U+202E,
 * U+2066-U+2069). A control or a separator (U+0085 NEXT LINE is a line break in Unicode, as
 * U+2028 and U+2029 are) could split a line as some reader sees it, forging what follows; a
 * bidirectional control reorders the text around it as a person sees it (`evil<U+202E>hs.txt`
 * reads as `eviltxt.sh`: the "Trojan Source" trick).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds.
const QUOTED_CHARS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
/** What JSON.stringify leaves raw among QUOTED_CHARS: escaped too, so a quoted path holds none of them. */
const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** QUOTED_CHARS but the tab, which a line of text shows as it is. */
const ESCAPED_IN_LINE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds.
  /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/**
 * The marks list_files puts after a name to say what it is besides a file (a directory's "/"
 * cannot end a name): a name ending in one is quoted, so a file `foo@` never reads as a link `foo`.
 */
const KIND_MARKS = ["@", "|", "=", "%"];

const escaped = (c: string): string => `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, "0")}`;

/**
 * A workspace path as the tools show it, on one unambiguous line: a path with a control
 * character, a line separator or a bidirectional control (QUOTED_CHARS), starting with a
 * double quote, starting with a space (an indented line is one under a long path, see
 * LONG_PATH_CHARS), or ending with one of list_files' marks (KIND_MARKS), is written as a JSON
 * string, each of QUOTED_CHARS in it escaped as `\uXXXX` (or `\n`, `\t`...), which the model
 * can decode back to the path. Every other path is shown as it is. list_files and
 * search_files both show paths this way.
 */
export const displayPath = (relative: string): string =>
  QUOTED_CHARS.test(relative) ||
  relative.startsWith('"') ||
  relative.startsWith(" ") ||
  KIND_MARKS.some((mark) => relative.endsWith(mark))
    ? JSON.stringify(relative).replace(RAW_IN_JSON, escaped)
    : relative;

/** How the tools' descriptions state it. */
export const DISPLAY_PATH_RULE =
  "A path with a control character, a line separator or a bidirectional control (such as a newline, U+0085, " +
  'U+2028 or U+202E), starting with " or a space, or ending with @, |, = or %, is shown as a JSON string ' +
  "(those characters escaped as \\n, \\uXXXX...).";

/**
 * A line of a file's text as a tool shows it on a line of its result: each of QUOTED_CHARS but
 * the tab written as `\uXXXX`, so that it neither breaks the line nor reorders it as a person
 * reads it; the rest (accents, CJK, emoji...) as it is. The text is unchanged when it holds
 * none: a caller compares to tell whether to say so (LINE_ESCAPES_NOTE).
 */
export const displayLine = (text: string): string => text.replace(ESCAPED_IN_LINE, escaped);

/** The note after lines of which displayLine escaped some. */
export const LINE_ESCAPES_NOTE =
  "[note: control characters (a tab apart), line separators and bidirectional controls in the lines shown " +
  "are written as \\uXXXX escapes; the file holds the characters themselves]";

/**
 * A path longer than this (as shown) is not repeated on each line that would start with it:
 * list_files and search_files write it once, on a line of its own ending in ":", and the
 * lines under it are indented by two spaces and leave it out. So a deep path (up to ~100,000
 * characters when quoted) costs its length once per group, not once per entry or match.
 */
export const LONG_PATH_CHARS = 256;

/** How the tools' descriptions state it; `what` names the lines under such a path. */
export const longPathRule = (what: string): string =>
  `A path longer than ${LONG_PATH_CHARS} characters is written once, on a line of its own ending in ":", ` +
  `followed by ${what}, each indented by two spaces.`;
