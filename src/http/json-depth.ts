/** The deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON `text` nests arrays and objects deeper than `max`, found by one scan of the
 * text (brackets inside strings do not count) before anything parses it: a deep value
 * would overflow the stack of whatever walks it recursively (validation, JSON.stringify).
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}
