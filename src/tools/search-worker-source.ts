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
  /**
   * The start directory, as the worker names it: `/proc/self/fd/<fd>` of a directory the
   * caller holds open (threads share descriptors), or its path off Linux (see FD_DIR).
   */
  base: string;
  /** FD_DIR: how the worker names the directories it opens itself. */
  fdDir: string | null;
  /** Each file as path components below `base`, and as shown (relative to the workspace). */
  files: { segments: string[]; relative: string }[];

  maxMatches: number;
  maxLineChars: number;
  maxFileBytes: number;
  sniffBytes: number;
}

/** A matching line: its file (an index into SearchWorkerData's `files`), its 1-based number, its text (see `maxLineChars`). */
export interface SearchMatch {
  file: number;
  line: number;
  text: string;
}

export interface SearchWorkerResult {
  /** In the order of `files`, then of lines; the caller formats them (it quotes paths, see displayPath). */
  matches: SearchMatch[];
  /** More matches existed than `maxMatches`. */
  truncated: boolean;
  searched: number;
  /** More files matched the glob than `maxFiles`. */
  tooManyFiles: boolean;
  skippedLarge: number;
  skippedBinary: number;
  /** Lines the pattern could not be run on (running it threw, e.g. its backtracking overflowed the stack): skipped. */
  skippedLines: number;
  /**
   * The search stopped because a file or directory could not be opened for lack of file
   * descriptors: the process's (EMFILE) or the system's (ENFILE). Null when it did not.
   */
  outOfDescriptors: "EMFILE" | "ENFILE" | null;
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
const { pattern, glob, base, fdDir, files, maxFiles, maxMatches, maxLineChars, maxFileBytes, sniffBytes } = workerData;
const C = fs.constants;
const O_DIR = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW;
const O_FILE = C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK;
const regex = new RegExp(pattern);
const globRegex = glob === null ? null : new RegExp(glob.source);
const keep = (rel) => globRegex === null || globRegex.test(glob.nameOnly ? rel.slice(rel.lastIndexOf("/") + 1) : rel);

// Characters are code points, never cut in half. Decoded text holds no lone surrogate
// (invalid bytes become U+FFFD): a high surrogate always starts a pair of two units.
const isHigh = (line, at) => { const unit = line.charCodeAt(at); return unit >= 0xd800 && unit <= 0xdbff; };
const isLow = (line, at) => { const unit = line.charCodeAt(at); return unit >= 0xdc00 && unit <= 0xdfff; };
/** The offset count characters after at (at most the line's end). */
function forward(line, at, count) {
  for (; count > 0 && at < line.length; count--) at += isHigh(line, at) ? 2 : 1;
  return at;
}
/** The offset count characters before at (at least 0); an offset inside a pair counts from the pair's start. */
function backward(line, at, count) {
  if (at > 0 && at < line.length && isLow(line, at)) at--;
  for (; count > 0 && at > 0; count--) at -= isLow(line, at - 1) ? 2 : 1;
  return at;
}

/**
 * The line, or when it is longer than maxLineChars characters a window of that many around the
 * match (from a quarter of them before it), marked with the line's length in characters.
 */
function excerpt(line, index) {
  if (line.length <= maxLineChars) return line;
  let start = backward(line, index, Math.floor(maxLineChars / 4));
  const end = forward(line, start, maxLineChars);
  if (end === line.length) start = backward(line, end, maxLineChars);
  if (start === 0 && end === line.length) return line;
  let chars = line.length;
  for (let at = 0; at < line.length; at++) if (isHigh(line, at)) chars--;
  return (start > 0 ? "…" : "") + line.slice(start, end) + (end < line.length ? "… [line cut: the line has " + chars + " characters]" : "");
}

// The directories below base that hold the file being read, each opened inside the one
// before without following a link (a directory swapped for a symlink fails to open and its
// files are skipped). A file's directories are shared with the
// file before it as far as their names agree. Node closes what is still open when the worker
// is terminated (trackUnmanagedFds).
const chain = [];
const whereOf = (depth) => (depth === 0 ? base : chain[depth - 1].where);
function closeChainFrom(depth) {
  while (chain.length > depth) {
    try { fs.closeSync(chain.pop().fd); } catch {}
  }
}
function openFile(segments) {
  const dirs = segments.length - 1;
  let keep = 0;
  while (keep < chain.length && keep < dirs && chain[keep].name === segments[keep]) keep++;
  closeChainFrom(keep);
  for (let i = keep; i < dirs; i++) {
    const path = whereOf(i) + "/" + segments[i];
    const fd = fs.openSync(path, O_DIR);
    chain.push({ name: segments[i], fd, where: fdDir === null ? path : fdDir + "/" + fd });
  }
  return fs.openSync(whereOf(dirs) + "/" + segments[dirs], O_FILE);
}

const result = {
  matches: [], truncated: false, searched: 0, tooManyFiles: false, skippedLarge: 0, skippedBinary: 0, skippedLines: 0,
  outOfDescriptors: null,
};
let kept = 0;
search: for (let index = 0; index < files.length; index++) {
  const file = files[index];
  if (!keep(file.relative)) continue;
  if (kept === maxFiles) { result.tooManyFiles = true; break; }
  kept++;
  let buffer;
  let fd = -1;
  try {
    fd = openFile(file.segments);
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) continue;
    if (stat.size > maxFileBytes) { result.skippedLarge++; continue; }
    // At most the size checked, plus one byte to see that it grew meanwhile (then it is large).
    buffer = Buffer.allocUnsafe(stat.size + 1);
    let filled = 0;
    for (let read = -1; read !== 0 && filled < buffer.length; filled += read) {
      read = fs.readSync(fd, buffer, filled, buffer.length - filled, filled);
    }
    if (filled > stat.size) { result.skippedLarge++; continue; }
    buffer = buffer.subarray(0, filled);
  } catch (err) {
    // A file that vanished or was swapped for a link is skipped; one that cannot be opened
    // for lack of descriptors is not, or the answer would silently miss files.
    if (err.code === "EMFILE" || err.code === "ENFILE") { result.outOfDescriptors = err.code; break; }
    continue;
  } finally {
    if (fd !== -1) fs.closeSync(fd);
  }
  if (buffer.subarray(0, sniffBytes).includes(0)) { result.skippedBinary++; continue; }
  result.searched++;
  // A leading byte-order mark is not part of line 1's text (as ripgrep reads it): ^ matches after it.
  const text = buffer.toString("utf8");
  const lines = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    if (line.endsWith("\r")) line = line.slice(0, -1);
    let match;
    try {
      match = regex.exec(line);
    } catch {
      result.skippedLines++;
      continue;
    }
    if (match === null) continue;
    if (result.matches.length === maxMatches) { result.truncated = true; break search; }
    result.matches.push({ file: index, line: i + 1, text: excerpt(line, match.index) });
  }
}
closeChainFrom(0);
parentPort.postMessage(result);
`;
