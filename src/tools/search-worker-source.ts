/**
 * The data a search worker receives; it answers with one SearchWorkerResult message.
 * Files are searched in the given order; the worker stops at `maxMatches` + 1.
 */
export interface SearchWorkerData {
  pattern: string;
  /** Files are kept when this anchored RegExp source matches (see `globFilter`); null keeps all. */
  glob: { source: string; nameOnly: boolean } | null;
  /** At most this many files (after the glob) are searched; more sets `tooManyFiles`. */
  maxFiles: number;
  files: { path: string; relative: string }[];
  maxMatches: number;
  maxLineChars: number;
  maxFileBytes: number;
  sniffBytes: number;
}

export interface SearchWorkerResult {
  /** Formatted `file:line: text`. */
  matches: string[];
  /** More matches existed than `maxMatches`. */
  truncated: boolean;
  searched: number;
  /** More files matched the glob than `maxFiles`. */
  tooManyFiles: boolean;
  skippedLarge: number;
  skippedBinary: number;
}

/**
 * The worker's program, run with `new Worker(SEARCH_WORKER_SOURCE, { eval: true })`. It is
 * plain CommonJS JavaScript kept in a string so that it runs the same from compiled output
 * and from TypeScript sources (tests), with no loader or build step. It runs the user's
 * regular expression and the glob's (which may both backtrack for ever): the parent
 * enforces the time limit by terminating the worker, which interrupts even a regex in progress.
 */
export const SEARCH_WORKER_SOURCE = String.raw`
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { pattern, glob, maxFiles, files, maxMatches, maxLineChars, maxFileBytes, sniffBytes } = workerData;
const regex = new RegExp(pattern);
const globRegex = glob === null ? null : new RegExp(glob.source);
const keep = (rel) => globRegex === null || globRegex.test(glob.nameOnly ? rel.slice(rel.lastIndexOf("/") + 1) : rel);

/** The line, or a window of it around the match when it is longer than maxLineChars. */
function excerpt(line, index) {
  if (line.length <= maxLineChars) return line;
  const start = Math.max(0, Math.min(index - Math.floor(maxLineChars / 4), line.length - maxLineChars));
  const end = start + maxLineChars;
  return (start > 0 ? "…" : "") + line.slice(start, end) + (end < line.length ? "… [line cut: " + line.length + " chars]" : "");
}

const result = { matches: [], truncated: false, searched: 0, tooManyFiles: false, skippedLarge: 0, skippedBinary: 0 };
let kept = 0;
search: for (const file of files) {
  if (!keep(file.relative)) continue;
  if (kept === maxFiles) { result.tooManyFiles = true; break; }
  kept++;
  let buffer;
  try {
    const stat = fs.statSync(file.path);
    if (!stat.isFile()) continue;
    if (stat.size > maxFileBytes) { result.skippedLarge++; continue; }
    buffer = fs.readFileSync(file.path);
  } catch {
    continue;
  }
  if (buffer.subarray(0, sniffBytes).includes(0)) { result.skippedBinary++; continue; }
  result.searched++;
  const lines = buffer.toString("utf8").split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    if (line.endsWith("\r")) line = line.slice(0, -1);
    const match = regex.exec(line);
    if (match === null) continue;
    if (result.matches.length === maxMatches) { result.truncated = true; break search; }
    result.matches.push(file.relative + ":" + (i + 1) + ": " + excerpt(line, match.index));
  }
}
parentPort.postMessage(result);
`;
