/**
 * An id the server sent (a run's, a session's) as a segment of a URL the client requests or
 * puts in a command it tells the user to type: percent-encoded down to letters, digits, `-`,
 * `_`, `.` and `%`. The server reads the same id from it, and a shell reads it as one plain
 * word: no `$(`, backquote, quote, space, `!`, `*` or `(` of a hostile server's id can turn a
 * suggested command into one of its own. Every id in a suggested command goes through here.
 */
export function urlSegment(id: string): string {
  // encodeURIComponent leaves these as they are; each means something to a shell.
  return encodeURIComponent(id).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
