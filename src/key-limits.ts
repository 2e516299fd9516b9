import { readFileSync } from "node:fs";

// The defaults of the per-key limits once AGENT_API_KEYS is set (without keys there are none).

/** MAX_RUNS_PER_KEY's default: a quarter of the server's slots, at least 1. */
export const defaultRunsPerKey = (maxConcurrentRuns: number): number => Math.max(1, Math.floor(maxConcurrentRuns / 4));

/** MAX_SESSIONS_PER_KEY's default. */
export const DEFAULT_SESSIONS_PER_KEY = 1000;

/** MAX_STREAMS_PER_KEY's default when the open-file limit does not lower it. */
const STREAMS_PER_KEY = 100;

/**
 * MAX_STREAMS_PER_KEY's default: 100, but at most a quarter of the process's open-file limit
 * (at least 1), so that one key cannot take every descriptor the server has.
 */
export const defaultStreamsPerKey = (openFileLimit: number | null): number =>
  openFileLimit === null ? STREAMS_PER_KEY : Math.max(1, Math.min(STREAMS_PER_KEY, Math.floor(openFileLimit / 4)));

/**
 * This process's soft limit on open files (`Max open files` in /proc/self/limits), or null
 * when it cannot be read (not Linux) or is unlimited.
 */
export function readOpenFileLimit(): number | null {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return line?.[1] ? Number(line[1]) : null;
  } catch {
    return null;
  }
}
