/**
 * Arguments as they are, with what would not show as itself made visible: bidirectional
 * controls and zero-width characters (which could make a command read otherwise than it
 * runs) as `\uXXXX`.
 */
export function shownExactly(text: string): string {
  return text.replace(/[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g, (c) => {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}
