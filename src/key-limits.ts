import { readFileSync } from "node:fs";
import { OVER_CAP_SLOTS } from "./http/connection-cap.js";

// The defaults of the per-key limits once AGENT_API_KEYS is set (without keys there are none),
// and of the server's cap on connections (MAX_CONNECTIONS), all read from the open-file limit
// (and the cap, from MAX_CONCURRENT_RUNS too).

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
 * The descriptors MAX_CONNECTIONS's default leaves the server whatever its runs do: about 36 are
 * open once it has started (SQLite's files, the worker threads' event loops, stdio and signal
 * pipes), and the rest is room for webhook deliveries (at most WEBHOOK_SLOTS sends at once,
 * and STUCK_SLOTS more that stopped answering: 48), a PostgreSQL pool, the metrics port's few
 * connections (METRICS_MAX_CONNECTIONS) and a child process being started (a pipe pair while
 * it is spawned).
 */
const RESERVED_DESCRIPTORS = 96;

/**
 * The descriptors one live run may hold at once, which MAX_CONNECTIONS's default keeps for each
 * of MAX_CONCURRENT_RUNS: its model request's upstream socket (kept open in the pool while a
 * tool runs), and while `shell` runs the workspace directory, the command's stdout and stderr
 * pipes and its watchdog's pipe (those 5 counted on a server running a command), and one more
 * for a tool's own (the search worker's event loop, an open file). The file tools hold fewer
 * (the workspace, a directory, a file); a walk of a deep tree (list_files, search_files) holds
 * a directory a level, which is not counted: a tool that runs out says so in its result.
 */
const DESCRIPTORS_PER_RUN = 6;

/**
 * The descriptors MAX_CONNECTIONS's default keeps for the server's own work: a quarter of the
 * open-file limit, or, when more, RESERVED_DESCRIPTORS, the connections accepted over the cap
 * (OVER_CAP_SLOTS) and DESCRIPTORS_PER_RUN for each run it may run at once (496 for 64 runs).
 */
const reservedDescriptors = (openFileLimit: number, maxConcurrentRuns: number): number =>
  Math.max(
    Math.ceil(openFileLimit / 4),
    RESERVED_DESCRIPTORS + OVER_CAP_SLOTS + maxConcurrentRuns * DESCRIPTORS_PER_RUN,
  );

/**
 * MAX_CONNECTIONS's default: what is left of the process's open-file limit once the descriptors
 * the server's own work needs are kept (reservedDescriptors), so that connections alone cannot
 * take the descriptors a run in flight needs (with the default 64 runs: 528 of 1024, 3072 of
 * 4096), but never less than a quarter of the limit (at least 1): a server must still take
 * connections when its limit is too low for every run at once (see lowOpenFileLimit, warned
 * at start). 0 (no limit) when the limit is unknown or unlimited.
 */
export const defaultMaxConnections = (openFileLimit: number | null, maxConcurrentRuns: number): number =>
  openFileLimit === null
    ? 0
    : Math.max(1, Math.floor(openFileLimit / 4), openFileLimit - reservedDescriptors(openFileLimit, maxConcurrentRuns));

/**
 * When the open-file limit cannot hold MAX_CONCURRENT_RUNS runs at once beside a quarter of it
 * for connections: the descriptors that would take (to tell the operator at start); else null.
 */
export function lowOpenFileLimit(openFileLimit: number | null, maxConcurrentRuns: number): number | null {
  if (openFileLimit === null) return null;
  const needed = reservedDescriptors(openFileLimit, maxConcurrentRuns) + Math.floor(openFileLimit / 4);
  return needed > openFileLimit ? needed : null;
}

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
