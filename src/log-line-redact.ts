import { secretRedactor } from "./model/redact.js";

/** A JSON string token: its quotes, and its characters and escapes between them. */
const JSON_STRING = /"(?:[^"\\]|\\.)*"/g;

/** A JSON escape, or a backslash left without the rest of one (when redaction took it). */
const ESCAPE_OR_LONE_BACKSLASH = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})?/g;

/**
 * A function that redacts `secrets` (as secretRedactor does) from a serialized JSON log line,
 * only within its string tokens (values and field names): its syntax and numbers are never
 * touched, so the line stays valid JSON with its numbers intact. A line holding none of the
 * secrets is passed through after one scan; a backslash whose escape a redaction cut (a secret
 * right after `\n`, say) is dropped with it.
 */
export function logLineRedactor(secrets: readonly string[]): (line: string) => string {
  const redact = secretRedactor(secrets);
  const redactContent = (content: string): string => {
    const out = redact(content);
    if (out === content) return content;
    return out.replace(ESCAPE_OR_LONE_BACKSLASH, (found) => (found === "\\" ? "" : found));
  };
  return (line) => {
    if (redact(line) === line) return line;
    return line.replace(JSON_STRING, (token) => `"${redactContent(token.slice(1, -1))}"`);
  };
}
