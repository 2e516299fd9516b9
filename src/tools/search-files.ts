import { z } from "zod";
import { type ToolOutcome, toolError } from "../agent/tool.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { DISPLAY_PATH_RULE, LINE_ESCAPES_NOTE, longPathRule } from "./display-path.js";
import { ToolErrorCode } from "./error-codes.js";
import { fsErrorOutcome, notAFileOutcome, outOfDescriptorsOutcome } from "./fs-errors.js";
import { globFilter } from "./glob.js";
import { openLocatedDir } from "./located-io.js";
import { dirPath, FD_DIR, type OpenDir } from "./open-dir.js";
import { pathInput } from "./path-input.js";
import { abortedOutcome, searchFailedOutcome, timeoutOutcome } from "./search-errors.js";
import { showMatches } from "./search-match-lines.js";
import { runSearchWorker } from "./search-worker.js";
import type { SearchWorkerData } from "./search-worker-source.js";
import { BINARY_SNIFF_BYTES, formatBytes } from "./text.js";
import { walk } from "./walk.js";
import { type Located, locateInWorkspace } from "./workspace.js";

/** Caps: matches reported, characters shown per matching line, size of a file searched, files considered. */
export const SEARCH_MAX_MATCHES = 200;
export const SEARCH_MAX_LINE_CHARS = 300;
export const SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024;
export const SEARCH_MAX_FILES = 20_000;
/**
 * The match lines shown, in characters in all (the notes after them apart): 200 matches of
 * cut lines (~650 characters at most) under paths of up to LONG_PATH_CHARS fit; past it the
 * matches left are not shown and a note says so.
 */
export const SEARCH_MAX_OUTPUT_CHARS = 250_000;
/** Files the walk hands to the search worker at most, before the glob filters them. */
export const SEARCH_MAX_WALKED_FILES = 100_000;
/**
 * The paths of those files, in characters in all, at most: the server holds them and copies
 * them into the worker (twice: as the path and as its components), so deep trees of long
 * names (16 KB paths) cannot fill memory. 100,000 paths of 80 characters fit.
 */
export const SEARCH_MAX_WALKED_PATH_CHARS = 8_000_000;
/** Directory entries (of any kind) the walk reads at most: bounds what it holds while walking. */
export const SEARCH_MAX_LISTED_ENTRIES = 250_000;
/** The whole search (walk and match) is stopped after this long. */
export const SEARCH_TIME_LIMIT_MS = 10_000;
/** Directory levels the walk descends at most: what lies deeper is not searched, and the result says so. */
export const SEARCH_MAX_DEPTH = 64;

export const searchFilesInput = z.strictObject({
  pattern: z
    .string()
    .min(1)
    .max(1000)
    .describe(
      "JavaScript regular expression (no slashes, no flags), matched against each line, e.g. 'function \\w+\\('.",
    ),
  path: pathInput
    .optional()
    .describe('Directory (or single file) to search, relative to the workspace root. Defaults to ".".'),
  glob: z
    .string()
    .min(1)
    .max(500)
    .optional()
    .describe(
      "Only search files matching this glob. Without '/' it matches file names ('*.ts', '*.{js,mjs}'); " +
        "with '/' the path relative to the workspace root ('src/**/*.test.ts', './*.ts' for the root's files only).",
    ),
});

export type SearchFilesInput = z.infer<typeof searchFilesInput>;

export interface SearchFilesOptions {
  /** Overrides SEARCH_TIME_LIMIT_MS (tests use a short limit). */
  timeLimitMs?: number;
}

/** Builds the search_files tool; `searchFilesTool` is the one with the default limits. */
export function createSearchFilesTool({
  timeLimitMs = SEARCH_TIME_LIMIT_MS,
}: SearchFilesOptions = {}): WorkspaceToolDefinition<SearchFilesInput> {
  return {
    name: "search_files",
    description:
      "Search the workspace's text files for lines matching a JavaScript regular expression (case-sensitive; " +
      "use e.g. [Ff]oo for either case). Each match is " +
      `reported as \`file:line: text\` (file relative to the workspace root, line 1-based). ${DISPLAY_PATH_RULE} ` +
      `${longPathRule("its matches as `line: text`")} In the text, control characters (a tab apart), line ` +
      "separators and bidirectional controls are written as \\uXXXX escapes (a note says so). Binary files, files over " +
      `${formatBytes(SEARCH_MAX_FILE_BYTES)}, .git and node_modules are skipped, and so is what lies over ${SEARCH_MAX_DEPTH} directory levels down (a note says so); at most ${SEARCH_MAX_MATCHES} ` +
      `matches (and ${SEARCH_MAX_OUTPUT_CHARS} characters of them) are reported and long lines are cut. A search running over ${timeLimitMs / 1000} s is stopped: ` +
      "avoid nested quantifiers like (a+)+.",
    inputSchema: searchFilesInput,
    readOnly: true,
    execute: (input, ctx) => searchFiles({ ...input, workspace: ctx.workspace, signal: ctx.signal, timeLimitMs }),
  };
}

export const searchFilesTool = createSearchFilesTool();

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

async function searchFiles({
  pattern,
  path = ".",
  glob,
  workspace,
  signal,
  timeLimitMs,
}: SearchFilesInput & { workspace: string; signal: AbortSignal; timeLimitMs: number }): Promise<ToolOutcome> {
  const deadline = Date.now() + timeLimitMs;
  try {
    new RegExp(pattern);
  } catch (err) {
    const reason = err instanceof Error ? err.message : "invalid";
    return toolError(
      ToolErrorCode.invalidPattern,
      `pattern is not a valid JavaScript regular expression: ${reason}`,
      true,
    );
  }
  const globRule = glob === undefined ? null : globFilter(glob);
  if (glob !== undefined && !globRule) {
    return toolError(
      ToolErrorCode.invalidPattern,
      `glob "${glob}" is malformed (an unclosed [ or {, or a range out of order such as [z-a])`,
      true,
    );
  }

  const located = await locateInWorkspace({ workspace, path });
  if (!located.ok) return located.outcome;
  try {
    return await searchLocated({ at: located.at, display: path, pattern, globRule, signal, deadline, timeLimitMs });
  } catch (err) {
    return fsErrorOutcome(err, path);
  } finally {
    await located.at.close();
  }
}

/** Lists the files to search (through open directories) and has the worker search them. */
async function searchLocated({
  at,
  display,
  pattern,
  globRule,
  signal,
  deadline,
  timeLimitMs,
}: {
  at: Located;
  display: string;
  pattern: string;
  globRule: SearchWorkerData["glob"];
  signal: AbortSignal;
  deadline: number;
  timeLimitMs: number;
}): Promise<ToolOutcome> {
  const files: SearchWorkerData["files"] = [];
  let tooManyFiles = false;
  /** Why the walk stopped before covering the tree (a bound), null when it covered it. */
  let walkCut: string | null = null;
  /** Directories at SEARCH_MAX_DEPTH the walk did not enter. */
  let tooDeep = 0;
  let start: { dir: OpenDir; close(): Promise<void> };
  if (at.kind === "file" && at.name !== null) {
    // A single file: the worker opens it inside its directory (held by the location).
    files.push({ segments: [at.name], relative: at.relative });
    start = { dir: at.dir, close: async () => {} };
  } else if (at.kind === "directory") {
    const opened = await openLocatedDir(at, display);
    if (!opened.ok) return opened.outcome;
    start = opened;
  } else if (at.kind === "missing") {
    return fsErrorOutcome({ code: "ENOENT" }, display);
  } else {
    return notAFileOutcome(display, false);
  }
  let run: Awaited<ReturnType<typeof runSearchWorker>>;
  try {
    if (at.kind === "directory") {
      // The walk stops at the time limit or the run's cancellation, letting the loop turn meanwhile.
      const walkSignal = AbortSignal.any([signal, AbortSignal.timeout(Math.max(0, deadline - Date.now()))]);
      const walked = walk({
        start: start.dir,
        relative: at.relative,
        maxDepth: SEARCH_MAX_DEPTH,
        countTooDeep: true,
        signal: walkSignal,
        maxListed: SEARCH_MAX_LISTED_ENTRIES,
      });
      let pathChars = 0;
      for await (const entry of walked) {
        if (entry.kind !== "file") continue;
        if (files.length === SEARCH_MAX_WALKED_FILES) {
          tooManyFiles = true;
          break;
        }
        pathChars += entry.relative.length;
        if (pathChars > SEARCH_MAX_WALKED_PATH_CHARS) {
          walkCut = `the paths of the files found passed ${SEARCH_MAX_WALKED_PATH_CHARS} characters`;
          break;
        }
        files.push({ segments: entry.segments, relative: entry.relative });
      }
      if (signal.aborted) return abortedOutcome(signal);
      if (walked.cut === "aborted" || Date.now() > deadline) return timeoutOutcome(timeLimitMs);
      tooDeep = walked.tooDeep;
      if (walked.cut === "too_many_entries") {
        walkCut = `the directories held over ${SEARCH_MAX_LISTED_ENTRIES} entries`;
      }
    }
    run = await runSearchWorker({
      data: {
        pattern,
        glob: globRule,
        maxFiles: SEARCH_MAX_FILES,
        base: dirPath(start.dir),
        fdDir: FD_DIR,
        files,
        maxMatches: SEARCH_MAX_MATCHES,
        maxLineChars: SEARCH_MAX_LINE_CHARS,
        maxFileBytes: SEARCH_MAX_FILE_BYTES,
        sniffBytes: BINARY_SNIFF_BYTES,
      },
      timeLimitMs: Math.max(0, deadline - Date.now()),
      signal,
    });
  } finally {
    await start.close();
  }
  if (run.kind === "aborted") return abortedOutcome(signal);
  if (run.kind === "timeout") return timeoutOutcome(timeLimitMs);
  if (run.kind === "out_of_descriptors") return outOfDescriptorsOutcome(run.code, "start the search with");
  if (run.kind === "failed") return searchFailedOutcome(run.error, display);
  if (run.result.outOfDescriptors)
    return outOfDescriptorsOutcome(run.result.outOfDescriptors, "open the files to search");

  const { matches, truncated: tooManyMatches, searched, skippedLarge, skippedBinary, skippedLines } = run.result;
  tooManyFiles ||= run.result.tooManyFiles;
  const shown = showMatches({ matches, files, maxChars: SEARCH_MAX_OUTPUT_CHARS });
  const cut = shown.count < matches.length;
  const notes: string[] = [];
  if (cut) {
    notes.push(
      `[truncated: showing ${shown.count} of the ${matches.length} matches found` +
        (tooManyMatches ? ` (the search stopped after ${SEARCH_MAX_MATCHES})` : "") +
        `, as many as fit in ${SEARCH_MAX_OUTPUT_CHARS} characters; narrow the pattern, path or glob]`,
    );
  } else if (tooManyMatches) {
    notes.push(`[truncated: stopped after ${SEARCH_MAX_MATCHES} matches; narrow the pattern, path or glob]`);
  }
  if (tooManyFiles) {
    notes.push(`[truncated: only the first ${SEARCH_MAX_FILES} files were searched; narrow the path or glob]`);
  }
  if (walkCut !== null) {
    notes.push(
      `[truncated: only part of the workspace was searched, the first ${plural(files.length, "file")} in path order (${walkCut}); narrow the path]`,
    );
  }
  if (tooDeep > 0) {
    notes.push(
      `[truncated: only part of the workspace was searched: directories deeper than ${SEARCH_MAX_DEPTH} levels were not entered ` +
        `(${tooDeep === 1 ? "1 directory" : `${tooDeep} directories`} ${SEARCH_MAX_DEPTH} levels down); search inside one by passing its path]`,
    );
  }
  if (skippedLarge > 0) {
    notes.push(
      `[truncated: skipped ${plural(skippedLarge, "file")} larger than ${formatBytes(SEARCH_MAX_FILE_BYTES)}; read them with read_file]`,
    );
  }
  if (skippedLines > 0) {
    notes.push(
      `[truncated: skipped ${plural(skippedLines, "line")} the pattern could not be run on (it overflowed the regular-expression engine's stack); simplify the pattern]`,
    );
  }
  if (skippedBinary > 0) notes.push(`[skipped ${plural(skippedBinary, "binary file")}]`);
  if (shown.escaped) notes.push(LINE_ESCAPES_NOTE);
  const truncated =
    cut || tooManyMatches || tooManyFiles || walkCut !== null || tooDeep > 0 || skippedLarge > 0 || skippedLines > 0;
  const body = matches.length > 0 ? shown.lines : [`no matches in ${plural(searched, "file")} searched`];
  return { ok: true, output: [...body, ...notes].join("\n"), truncated, files: shown.files };
}
