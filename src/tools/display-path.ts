/**
 * A workspace path as the tools show it, on one unambiguous line: a path with a control
 * character (a newline would split it over two lines, forging what follows), starting with a
 * double quote, starting with a space (an indented line is one under a long path, see
 * LONG_PATH_CHARS), or ending with "@" (list_files marks a symbolic link so: a file `foo@`
 * would read as a link `foo`), is written as a JSON string, which the model can decode back
 * to the path. Every other path is shown as it is. list_files and search_files both show
 * paths this way.
 */
export const displayPath = (relative: string): string =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds.
  /[\u0000-\u001f\u007f]/.test(relative) ||
  relative.startsWith('"') ||
  relative.startsWith(" ") ||
  relative.endsWith("@")
    ? JSON.stringify(relative)
    : relative;

/** How the tools' descriptions state it. */
export const DISPLAY_PATH_RULE =
  'A path with a control character (such as a newline), starting with " or a space, or ending with @, is shown as a JSON string.';

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
