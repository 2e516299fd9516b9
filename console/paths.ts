/**
 * API paths built from ids: each id is one path segment, encoded, so an id (from the URL's
 * hash, from an event) can never name another path (`..`, `?`, `/`).
 */

/** Whether `id` reads as a session id (`ses_` and lower-case base-32 digits), as the hash must. */
export const isSessionId = (id: string): boolean => /^ses_[0-9a-z]+$/.test(id);

/** `/sessions/{id}` and what follows it. */
export const sessionPath = (id: string, rest = ""): string => `/sessions/${encodeURIComponent(id)}${rest}`;

/** `/runs/{id}` and what follows it. */
export const runPath = (id: string, rest = ""): string => `/runs/${encodeURIComponent(id)}${rest}`;
