import { z } from "zod";
import { stopCause, toolError, toolOk } from "../agent/tool.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { DISPLAY_PATH_RULE, displayPath, LONG_PATH_CHARS, longPathRule } from "./display-path.js";
import { ToolErrorCode } from "./error-codes.js";
import { fsErrorOutcome } from "./fs-errors.js";
import { openLocatedDir } from "./located-io.js";
import { OutputLines } from "./output-lines.js";
import { pathInput } from "./path-input.js";
import { type WalkEntry, walk } from "./walk.js";
import { locateInWorkspace } from "./workspace.js";

/** At most this many entries are listed; the rest is reported as truncated. */
export const LIST_MAX_ENTRIES = 500;
/**
 * The entries' lines, in characters in all (the note after them apart), at most: 500 entries
 * of ordinary names fit many times over (a model reads a listing whole); past it the entries
 * left are not listed and a note says so (as with search_files' cap).
 */
export const LIST_MAX_OUTPUT_CHARS = 250_000;
/**
 * At most this many directory entries are read in all (hidden ones included), as search_files
 * reads: the directory that would pass it is not listed, and the listing is reported as
 * truncated there. It bounds the time and memory a listing takes (each directory is read
 * whole and sorted before its first entry is shown).
 */
export const LIST_MAX_LISTED_ENTRIES = 250_000;
export const LIST_DEFAULT_DEPTH = 2;
export const LIST_MAX_DEPTH = 10;

export const listFilesInput = z.strictObject({
  path: pathInput
    .optional()
    .describe('Directory to list, relative to the workspace root. Defaults to "." (the workspace root).'),
  depth: z
    .number()
    .int()
    .min(1)
    .max(LIST_MAX_DEPTH)
    .optional()
    .describe(
      `How many directory levels to descend: 1 lists only the directory itself. Defaults to ${LIST_DEFAULT_DEPTH}.`,
    ),
});

export type ListFilesInput = z.infer<typeof listFilesInput>;

/** The mark after a name saying what it is (as `ls -F` marks them; "%" for a device is list_files' own). */
const SUFFIX: Record<WalkEntry["kind"], string> = {
  directory: "/",
  symlink: "@",
  fifo: "|",
  socket: "=",
  device: "%",
  file: "",
  other: "",
};

export const listFilesTool: WorkspaceToolDefinition<ListFilesInput> = {
  name: "list_files",
  description:
    "List the files and directories under a workspace directory, recursively up to a depth. " +
    "One path per line, relative to the workspace root (usable as-is with read_file), sorted, each directory " +
    'followed by its contents. Directories end with "/", symbolic links with "@" (links are not followed), ' +
    'FIFOs (named pipes) with "|", sockets with "=" and devices with "%" (none of those three can be read). ' +
    `${DISPLAY_PATH_RULE} ${longPathRule("the entries of that directory listed by name")} ` +
    `.git and node_modules are hidden. At most ${LIST_MAX_ENTRIES} entries (and ${LIST_MAX_OUTPUT_CHARS} ` +
    "characters of them), and the listing stops at a directory " +
    `that would bring the entries read past ${LIST_MAX_LISTED_ENTRIES}; a note says when the list was cut.`,
  inputSchema: listFilesInput,
  readOnly: true,
  async execute({ path = ".", depth = LIST_DEFAULT_DEPTH }, { workspace, signal }) {
    const located = await locateInWorkspace({ workspace, path });
    if (!located.ok) return located.outcome;
    const out = new OutputLines(LIST_MAX_OUTPUT_CHARS);
    let entries = 0;
    let truncated = false;
    let tooManyEntries = false;
    try {
      const opened = await openLocatedDir(located.at, path);
      if (!opened.ok) return opened.outcome;
      try {
        // A cancel (or the run's deadline) ends a long walk within one piece of a directory it reads.
        const walked = walk({
          start: opened.dir,
          relative: located.at.relative,
          maxDepth: depth,
          signal,
          maxListed: LIST_MAX_LISTED_ENTRIES,
        });
        for await (const entry of walked) {
          if (entries === LIST_MAX_ENTRIES || !addEntry(out, entry)) {
            truncated = true;
            break;
          }
          entries++;
        }
        if (walked.cut === "aborted" || signal.aborted) {
          return toolError(
            ToolErrorCode.listAborted,
            `listing "${path}" was stopped because ${stopCause(signal)}`,
            false,
          );
        }
        tooManyEntries = walked.cut === "too_many_entries";
      } finally {
        await opened.close();
      }
    } catch (err) {
      return fsErrorOutcome(err, path);
    } finally {
      await located.at.close();
    }
    const lines = out.lines;
    if (tooManyEntries) {
      lines.push(
        `[truncated: the listing stopped where its directories held over ${LIST_MAX_LISTED_ENTRIES} entries in all, ` +
          "too many to list; list a smaller subdirectory or use a smaller depth]",
      );
      return toolOk(lines.join("\n"), true);
    }
    if (lines.length === 0) return toolOk(`(no files or directories in "${path}")`);
    if (out.full) {
      lines.push(
        `[truncated: showing the first ${entries} entries, as many as fit in ${LIST_MAX_OUTPUT_CHARS} characters; ` +
          "list a subdirectory or use a smaller depth to see the rest]",
      );
    } else if (truncated) {
      lines.push(
        `[truncated: showing the first ${LIST_MAX_ENTRIES} entries; list a subdirectory or use a smaller depth to see the rest]`,
      );
    }
    return toolOk(lines.join("\n"), truncated);
  },
};

/**
 * Adds an entry's line: its path, or its name under its directory's path when that path is
 * long (LONG_PATH_CHARS). False when the line does not fit in the output.
 */
function addEntry(out: OutputLines, entry: WalkEntry): boolean {
  const suffix = SUFFIX[entry.kind];
  const parent = entry.relative.slice(0, -entry.name.length - 1);
  const shownParent = displayPath(parent);
  if (shownParent.length <= LONG_PATH_CHARS) return out.add(displayPath(entry.relative) + suffix);
  return out.add(`  ${displayPath(entry.name)}${suffix}`, `${shownParent}/:`);
}
