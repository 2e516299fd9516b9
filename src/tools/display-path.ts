/**
 * A workspace path as the tools show it, on one unambiguous line: a path with a control
 * character (a newline would split it over two lines, forging what follows), or starting with
 * a double quote, is written as a JSON string, which the model can decode back to the path.
 * Every other path is shown as it is. list_files and search_files both show paths this way.
 */
export const displayPath = (relative: string): string =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds.
  /[\u0000-\u001f\u007f]/.test(relative) || relative.startsWith('"') ? JSON.stringify(relative) : relative;

/** How the tools' descriptions state it. */
export const DISPLAY_PATH_RULE =
  'A path with a control character (such as a newline), or starting with ", is shown as a JSON string.';
