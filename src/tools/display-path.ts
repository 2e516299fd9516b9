/**
 * Characters that make a path quoted: the control characters (C0, DEL and C1, General
 * Category Cc) and the line and paragraph separators U+2028 and U+2029. Each of them, or a
 * newline among them (U+0085 NEXT LINE is a line break in Unicode, as U+2028 and U+2029 are),
 * could split the path over two lines as some reader sees them, forging what follows.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds.
const QUOTED_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
/** What JSON.stringify leaves raw among QUOTED_CHARS: escaped too, so a quoted path holds no line break. */
const RAW_IN_JSON = /[\u007f-\u009f\u2028\u2029]/g;

const escaped = (c: string): string => `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, "0")}`;

/**
 * A workspace path as the tools show it, on one unambiguous line: a path with a control
 * character or a line separator (QUOTED_CHARS), starting with a double quote, starting with a
 * space (an indented line is one under a long path, see LONG_PATH_CHARS), or ending with "@"
 * (list_files marks a symbolic link so: a file `foo@` would read as a link `foo`), is written
 * as a JSON string, each of QUOTED_CHARS in it escaped as `\uXXXX` (or `\n`, `\t`...), which
 * the model can decode back to the path. Every other path is shown as it is. list_files and
 * search_files both show paths this way.
 */
export const displayPath = (relative: string): string =>
  QUOTED_CHARS.test(relative) || relative.startsWith('"') || relative.startsWith(" ") || relative.endsWith("@")
    ? JSON.stringify(relative).replace(RAW_IN_JSON, escaped)
    : relative;

/** How the tools' descriptions state it. */
export const DISPLAY_PATH_RULE =
  'A path with a control character or a line separator (such as a newline, U+0085 or U+2028), starting with " ' +
  "or a space, or ending with @, is shown as a JSON string (those characters escaped as \\n, \\uXXXX...).";

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
