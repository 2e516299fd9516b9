import { z } from "zod";

/** The longest path a workspace tool accepts, in characters (Unicode code points): Linux's PATH_MAX. */
export const PATH_MAX_CHARS = 4096;

/** Code points in `text` (what zod's and JSON Schema's string lengths count). */
function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * A workspace path in a tool's input, the one piece every file tool's schema takes its `path`
 * from: at most PATH_MAX_CHARS characters (the JSON Schema sent to the model says
 * `maxLength`). The model's arguments are untrusted: a path of any length was echoed whole in
 * the call's result, its approval request and its errors. A longer one is now invalid
 * arguments (INVALID_ARGUMENTS, a result the model sees) that name only its length.
 */
export const pathInput = z.string().max(PATH_MAX_CHARS, {
  error: (issue) =>
    `a path is at most ${PATH_MAX_CHARS} characters (PATH_MAX); this one has ` +
    `${typeof issue.input === "string" ? codePoints(issue.input).toLocaleString("en-US") : "more"}`,
});
