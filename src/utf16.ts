/** Whether the UTF-16 code unit is the first half of a surrogate pair. */
export const isHighSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff;

/**
 * Where `text` may be cut at or before `at` without splitting a character: `at`, or one unit
 * earlier when the unit before `at` is a high surrogate (its pair would be left on the other side).
 */
export const characterBoundary = (text: string, at: number): number =>
  at > 0 && at <= text.length && isHighSurrogate(text.charCodeAt(at - 1)) ? at - 1 : at;
