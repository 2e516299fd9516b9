import { readFileSync } from "node:fs";

// The defaults of the per-key limits once AGENT_API_KEYS is set (without keys there are none),
// and of the server's cap on connections (MAX_CONNECTIONS), all read from the open-file limit.

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
 * The descriptors MAX_CONNECTIONS's default leaves the server at the least, whatever the limit:
 * about 36 are open once it has started (SQLite's files, the worker threads' event loops, stdio
 * and signal pipes), and runs in flight open more (an upstream socket each, a tool's files, a
 * shell command's pipes, webhook deliveries, a PostgreSQL pool), and so do the metrics port's
 * few connections (METRICS_MAX_CONNECTIONS).
 */
const RESERVED_DESCRIPTORS = 64;

/**
 * MAX_CONNECTIONS's default: what is left of the process's open-file limit once a quarter of it
 * (at least RESERVED_DESCRIPTORS) is kept for the server's own work, so that connections alone
 * cannot take the descriptors a run in flight needs (768 of 1024, 3072 of 4096); at least 1.
 * 0 (no limit) when the limit is unknown or unlimited.
 */
export const defaultMaxConnections = (openFileLimit: number | null): number =>
  openFileLimit === null
    ? 0
    : Math.max(1, openFileLimit - Math.max(RESERVED_DESCRIPTORS, Math.ceil(openFileLimit / 4)));

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
