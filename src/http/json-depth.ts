/** The deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 64;

/**
 * How deep JSON `text` nests arrays and objects (0 for a scalar), found by one scan of the
 * text (brackets inside strings do not count) before anything parses it; the scan stops at
 * the first level past `stopAbove`, which it then answers.
 */
export function jsonDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      deepest = Math.max(deepest, ++depth);
      if (depth > stopAbove) return depth;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return deepest;
}

/**
 * Whether JSON `text` nests arrays and objects deeper than `max`: a deep value would overflow
 * the stack of whatever walks it recursively (validation, JSON.stringify).
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  return jsonDepth(text, max) > max;
}
