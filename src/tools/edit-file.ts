import type { FileHandle } from "node:fs/promises";
import { z } from "zod";
import { type ToolOutcome, toolError, toolOk } from "../agent/tool.js";
import { writeFileAtomic } from "./atomic-write.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { ToolErrorCode } from "./error-codes.js";
import { withFileLock } from "./file-locks.js";
import { fsErrorOutcome } from "./fs-errors.js";
import { openLocatedFile } from "./located-io.js";
import { pathInput } from "./path-input.js";
import { formatBytes, looksBinary } from "./text.js";
import { type Located, locateInWorkspace } from "./workspace.js";

/** edit_file works on files up to this size (before and after the edit). */
export const EDIT_MAX_FILE_BYTES = 5 * 1024 * 1024;

export const editFileInput = z.strictObject({
  path: pathInput.min(1).describe("File to edit, relative to the workspace root. It must exist."),
  oldText: z
    .string()
    .min(1)
    .describe(
      "Exact text to replace, character for character (whitespace and indentation included; no line numbers). " +
        "Include enough surrounding lines to make it unique in the file.",
    ),
  newText: z.string().describe("Text to put in place of oldText. Empty to delete it."),
  replaceAll: z
    .boolean()
    .optional()
    .describe("Replace every occurrence of oldText instead of requiring exactly one. Defaults to false."),
});

export type EditFileInput = z.infer<typeof editFileInput>;

/** Start offsets of the non-overlapping occurrences of `needle` in `haystack`, from the start: what replaceAll replaces. */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

/**
 * Where `needle` occurs again, overlapping its occurrence at `first` (a start before
 * `first + needle.length`), or null. Such a second place makes replacing one ambiguous even
 * when the non-overlapping occurrences are one. One search: the count stops at 2.
 */
function overlappingSecond(haystack: string, needle: string, first: number): number | null {
  const at = haystack.indexOf(needle, first + 1);
  return at !== -1 && at < first + needle.length ? at : null;
}

const lineAt = (text: string, offset: number): number => text.slice(0, offset).split("\n").length;

/** A text's line ends: all CRLF, all LF, both kinds, or none (a single line). */
type LineEnds = "crlf" | "lf" | "mixed" | "none";

function lineEnds(text: string): LineEnds {
  const crlf = text.includes("\r\n");
  const lf = /(?:^|[^\r])\n/.test(text);
  return crlf ? (lf ? "mixed" : "crlf") : lf ? "lf" : "none";
}

/**
 * What an edit replaces and writes. In a file whose line ends are all CRLF, oldText holding \n
 * and no \r is looked for with each \n as \r\n (as given it could match only a \n that is the
 * second half of a \r\n, leaving the \r before it: \r\r\n once newText is written), and
 * newText's lone \n are written as \r\n, so the file keeps its line ends. Otherwise oldText is
 * looked for as given. `found`: the non-overlapping occurrences of `oldForm`.
 */
function editForms(
  text: string,
  oldText: string,
  newText: string,
): { ends: LineEnds; oldForm: string; newForm: string; found: number[]; crlfTried: boolean } {
  const ends = lineEnds(text);
  const newForm = ends === "crlf" ? newText.replace(/(?<!\r)\n/g, "\r\n") : newText;
  if (ends !== "crlf" || oldText.includes("\r") || !oldText.includes("\n")) {
    return { ends, oldForm: oldText, newForm, found: occurrences(text, oldText), crlfTried: false };
  }
  const oldForm = oldText.replaceAll("\n", "\r\n");
  return { ends, oldForm, newForm, found: occurrences(text, oldForm), crlfTried: true };
}

/** What a NO_MATCH message says of the file's line ends, when they may be why. */
function lineEndsNote(ends: LineEnds, crlfTried: boolean): string {
  if (ends === "crlf") {
    return ` The file's line ends are CRLF (\\r\\n)${crlfTried ? "; oldText was looked for with its \\n as \\r\\n" : ""}.`;
  }
  if (ends === "mixed") {
    return " The file's line ends are mixed, CRLF (\\r\\n) and LF (\\n): write \\r\\n in oldText where the text to replace has it.";
  }
  return "";
}

export const editFileTool: WorkspaceToolDefinition<EditFileInput> = {
  name: "edit_file",
  description:
    "Replace an exact piece of text in an existing workspace file. oldText must occur exactly once, counting " +
    "occurrences that overlap (or set replaceAll: it replaces the non-overlapping ones, from the start); when it " +
    "occurs zero or several times nothing is changed and the error says how many times it was found. Copy " +
    "oldText from read_file output without the line-number prefix. In a file whose line ends are CRLF, \\n in " +
    "oldText and newText stands for \\r\\n. The write is atomic. " +
    `Files up to ${formatBytes(EDIT_MAX_FILE_BYTES)}.`,
  inputSchema: editFileInput,
  readOnly: false,
  async execute({ path, oldText, newText, replaceAll = false }, { workspace }) {
    const located = await locateInWorkspace({ workspace, path });
    if (!located.ok) return located.outcome;
    try {
      // One edit of a file at a time in this process: another's rename would lose this one's change.
      const name = located.at.name;
      const edit = () => editLocated(located.at, { path, oldText, newText, replaceAll });
      return name === null ? await edit() : await withFileLock(located.at.dir, name, edit);
    } catch (err) {
      return fsErrorOutcome(err, path);
    } finally {
      await located.at.close();
    }
  },
};

/** The edit of the located file `at` (see editFileTool): read, checked, replaced, written atomically. */
async function editLocated(
  at: Located,
  { path, oldText, newText, replaceAll }: { path: string; oldText: string; newText: string; replaceAll: boolean },
): Promise<ToolOutcome> {
  const opened = await openLocatedFile(at, path);
  if (!opened.ok) return opened.outcome;
  const { info } = opened;
  if (info.size > EDIT_MAX_FILE_BYTES) {
    await opened.file.close();
    return toolError(
      ToolErrorCode.fileTooLarge,
      `"${path}" is ${formatBytes(info.size)}, over the ${formatBytes(EDIT_MAX_FILE_BYTES)} limit of edit_file`,
      false,
    );
  }
  const bytes = await readUpTo(opened.file, info.size).finally(() => opened.file.close());
  if (bytes === null) {
    return toolError(ToolErrorCode.ioError, `"${path}" grew while it was being read; try again`, true);
  }
  const text = bytes.toString("utf8");
  // A file that does not survive a UTF-8 round trip would be corrupted by rewriting it as text.
  if (looksBinary(bytes) || !Buffer.from(text, "utf8").equals(bytes)) {
    return toolError(ToolErrorCode.binaryFile, `"${path}" is binary or not valid UTF-8; edit_file edits text`, false);
  }
  const { ends, oldForm, newForm, found, crlfTried } = editForms(text, oldText, newText);
  const first = found[0];
  if (first === undefined) {
    return toolError(
      ToolErrorCode.noMatch,
      `oldText was not found in "${path}" (0 matches); it must match exactly, including whitespace and indentation.${lineEndsNote(ends, crlfTried)} Read the file again and copy the text.`,
      true,
    );
  }
  if (found.length > 1 && !replaceAll) {
    return toolError(
      ToolErrorCode.ambiguousMatch,
      `oldText occurs ${found.length} times in "${path}"; nothing was changed. Include more surrounding text to make it unique, or set replaceAll to replace all ${found.length}.`,
      true,
    );
  }
  const overlap = replaceAll ? null : overlappingSecond(text, oldForm, first);
  if (overlap !== null) {
    return toolError(
      ToolErrorCode.ambiguousMatch,
      `oldText occurs 2 times or more in "${path}", overlapping (starting at line ${lineAt(text, first)} and at line ${lineAt(text, overlap)}); nothing was changed. Include more surrounding text to make it unique.`,
      true,
    );
  }
  // Known before the new text is built: a small edit replacing every match of a short text
  // with a long one could otherwise build hundreds of megabytes to refuse them.
  const replaced = replaceAll ? found.length : 1;
  const size = Buffer.byteLength(text) + replaced * (Buffer.byteLength(newForm) - Buffer.byteLength(oldForm));
  if (size > EDIT_MAX_FILE_BYTES) {
    return toolError(
      ToolErrorCode.fileTooLarge,
      `the edit would make "${path}" ${formatBytes(size)}, over the ${formatBytes(EDIT_MAX_FILE_BYTES)} limit`,
      true,
    );
  }
  const updated = replaceAll
    ? text.split(oldForm).join(newForm)
    : text.slice(0, first) + newForm + text.slice(first + oldForm.length);
  if (updated === text) return toolOk(`no change: newText is identical to oldText in "${path}"`);
  // name is the located file's (openLocatedFile refused anything else).
  await writeFileAtomic({ dir: at.dir, name: at.name!, data: updated, mode: info.mode & 0o7777 });
  const count = found.length === 1 ? "1 occurrence" : `${found.length} occurrences`;
  const where = found.length === 1 ? `at line ${lineAt(text, first)}` : `first at line ${lineAt(text, first)}`;
  return toolOk(`replaced ${count} in "${path}" (${where}); the file is now ${size} bytes`);
}

/**
 * The file's bytes, read through its descriptor up to the `size` it had when checked: null when
 * there are more (it grew meanwhile), so no more than one byte past the checked size is ever
 * read, whatever another process does to the file.
 */
async function readUpTo(file: FileHandle, size: number): Promise<Buffer | null> {
  const buffer = Buffer.alloc(size + 1);
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await file.read(buffer, filled, buffer.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled > size ? null : buffer.subarray(0, filled);
}
