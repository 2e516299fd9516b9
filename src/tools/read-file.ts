import type { Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import { stopCause, type ToolOutcome, toolError, toolOk } from "../agent/tool.js";
import type { WorkspaceToolDefinition } from "./definition.js";
import { ToolErrorCode } from "./error-codes.js";
import { fsErrorOutcome } from "./fs-errors.js";
import { LineWindow } from "./line-window.js";
import { openLocatedFile } from "./located-io.js";
import { pathInput } from "./path-input.js";
import { formatBytes, looksBinary } from "./text.js";
import { locateInWorkspace } from "./workspace.js";

/** Output caps: at most this many lines, this many bytes of output, this many characters per line. */
export const READ_MAX_LINES = 2000;
export const READ_MAX_BYTES = 100_000;
export const READ_MAX_LINE_CHARS = 2000;
/**
 * At most this many bytes of a file are read per call, whatever its size: reaching a window
 * (or counting what follows a cut line) never reads further, so a huge or sparse file costs a
 * bounded time (~0.3 s at ~200 MB/s of decoding). Lines past it are out of read_file's reach;
 * the result says where it stopped and how big the file is.
 */
export const READ_MAX_SCAN_BYTES = 64 * 1024 * 1024;
/** The file is read in reads of this many bytes: a line end's \r and \n may come in two. */
export const READ_CHUNK_BYTES = 64 * 1024;

export const readFileInput = z.strictObject({
  path: pathInput.min(1).describe("File to read, relative to the workspace root."),
  startLine: z.number().int().min(1).optional().describe("First line to show, 1-based. Defaults to 1."),
  endLine: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("Last line to show, inclusive. Defaults to the end of the file (within the output caps)."),
});

export type ReadFileInput = z.infer<typeof readFileInput>;

export const readFileTool: WorkspaceToolDefinition<ReadFileInput> = {
  name: "read_file",
  description:
    "Read a text file from the workspace. Each line is shown as `<line number>\\t<text>` (the number and tab " +
    "are not part of the file); a CRLF line end (\\r\\n) is shown as a plain one, and a note names the lines " +
    "ending in CRLF when the lines shown end both ways, or when some do and the read covers part of the file. Use startLine/endLine to read part of a large file. " +
    `Output is capped at ${READ_MAX_LINES} lines and ${READ_MAX_BYTES} bytes, lines longer than ` +
    `${READ_MAX_LINE_CHARS} characters are cut; a note at the end says when and where to continue. Only the ` +
    `first ${formatBytes(READ_MAX_SCAN_BYTES)} of a file are read. Binary files are refused.`,
  inputSchema: readFileInput,
  readOnly: true,
  async execute({ path, startLine = 1, endLine }, { workspace, signal }) {
    if (endLine !== undefined && endLine < startLine) {
      return toolError(
        ToolErrorCode.invalidLineRange,
        `endLine (${endLine}) is before startLine (${startLine}); give endLine >= startLine`,
        true,
      );
    }
    const located = await locateInWorkspace({ workspace, path });
    if (!located.ok) return located.outcome;
    try {
      const opened = await openLocatedFile(located.at, path);
      if (!opened.ok) return opened.outcome;
      try {
        return await readWindow({ ...opened, display: path, startLine, endLine: endLine ?? Infinity, signal });
      } finally {
        await opened.file.close();
      }
    } catch (err) {
      return fsErrorOutcome(err, path);
    } finally {
      await located.at.close();
    }
  },
};

/**
 * Streams the open file until the requested window (or a cap) is complete, reading at most
 * READ_MAX_SCAN_BYTES and never holding the whole file. `signal` is looked at before each
 * read: once it fires, the result is READ_ABORTED.
 */
async function readWindow({
  file: handle,
  info,
  display,
  startLine,
  endLine,
  signal,
}: {
  file: FileHandle;
  info: Stats;
  display: string;
  startLine: number;
  endLine: number;
  signal: AbortSignal;
}): Promise<ToolOutcome> {
  const window = new LineWindow({
    startLine,
    endLine,
    maxLines: READ_MAX_LINES,
    maxBytes: READ_MAX_BYTES,
    maxLineChars: READ_MAX_LINE_CHARS,
  });
  const decoder = new StringDecoder("utf8");
  // Only checks the encoding (StringDecoder replaces invalid bytes silently).
  const strict = new TextDecoder("utf-8", { fatal: true });
  let validUtf8 = true;
  const checkUtf8 = (bytes: Uint8Array, stream: boolean) => {
    if (!validUtf8) return;
    try {
      strict.decode(bytes, { stream });
    } catch {
      validUtf8 = false;
    }
  };
  const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
  let first = true;
  let more = true;
  let scanned = 0;
  /** The line reading was in when it stopped at READ_MAX_SCAN_BYTES, the file going on; else null. */
  let reached: number | null = null;
  while (more) {
    if (signal.aborted) return abortedOutcome(display, signal);
    const want = Math.min(READ_CHUNK_BYTES, READ_MAX_SCAN_BYTES - scanned);
    // At the limit, one byte more tells whether the file goes on (then it is left unread).
    const { bytesRead } = await handle.read(buffer, 0, Math.max(want, 1), null);
    if (bytesRead === 0) break;
    if (want === 0) {
      reached = window.cutShort();
      break;
    }
    scanned += bytesRead;
    const bytes = buffer.subarray(0, bytesRead);
    if (first && looksBinary(bytes)) {
      return toolError(ToolErrorCode.binaryFile, `"${display}" is a binary file (${formatBytes(info.size)})`, false);
    }
    first = false;
    checkUtf8(bytes, true);
    more = window.push(decoder.write(bytes));
  }
  if (more && reached === null) {
    checkUtf8(new Uint8Array(0), false);
    window.push(decoder.end());
  }
  const totalLines = reached === null ? window.end() : 0;

  if (window.lines.length === 0 && reached !== null) {
    return toolError(
      ToolErrorCode.fileTooLarge,
      `startLine ${startLine} lies past the first ${formatBytes(READ_MAX_SCAN_BYTES)} of "${display}" ` +
        `(${formatBytes(info.size)}), which is as far as read_file reads: they reach line ${reached}`,
      false,
    );
  }
  if (window.lines.length === 0) {
    if (totalLines === 0 && startLine === 1) return toolOk(`(empty file: ${display})`);
    return toolError(
      ToolErrorCode.invalidLineRange,
      `startLine ${startLine} is past the end of "${display}", which has ${totalLines} line${totalLines === 1 ? "" : "s"}`,
      true,
    );
  }
  const notes: string[] = [];
  if (window.stoppedBy === "cap") {
    notes.push(
      `[truncated: showing lines ${window.firstKept}-${window.lastKept}; the file (${formatBytes(info.size)}) has more. ` +
        `Output is capped at ${READ_MAX_LINES} lines / ${READ_MAX_BYTES} bytes; continue with startLine=${window.lastKept + 1}]`,
    );
  } else if (reached !== null) {
    notes.push(
      `[truncated: showing lines ${window.firstKept}-${window.lastKept}; the file (${formatBytes(info.size)}) goes on ` +
        `past its first ${formatBytes(READ_MAX_SCAN_BYTES)}, which is as far as read_file reads (it stopped at line ${reached})]`,
    );
  }
  if (window.cutLines > 0) {
    notes.push(
      `[truncated: ${window.cutLines} line${window.cutLines === 1 ? " was" : "s were"} cut at ${READ_MAX_LINE_CHARS} characters]`,
    );
  }
  const truncated = notes.length > 0;
  // Lines before startLine or after those shown were not looked at: they may end otherwise.
  const partial = startLine > 1 || window.stoppedBy !== null || reached !== null;
  const lineEnds = crlfLinesNote(window.crlfLines, window.lfLines, partial);
  if (lineEnds) notes.push(lineEnds);
  if (!validUtf8) {
    notes.push(`[note: "${display}" is not valid UTF-8 text; bytes that are not were shown as \ufffd]`);
  }
  return toolOk([...window.lines, ...notes].join("\n"), truncated);
}

/** At most this many runs of lines are named in a note of mixed line ends. */
const MAX_NOTED_RUNS = 50;

/**
 * A note naming the lines shown that end in CRLF (`crlfLines`, ascending), in runs (`3-7`),
 * when the file may end lines both ways (both are shown as plain line ends): when the lines
 * shown end both in CRLF and in LF (`lfLines`), or when some end in CRLF and the read did not
 * cover the whole file (`partial`: a range, a capped page, the scan limit), whose other lines
 * may end in LF. An edit spanning a line end must then write \r\n where the file has it
 * (edit_file reads \n as \r\n only in a file whose line ends are all CRLF). Null otherwise: no
 * CRLF shown, or a whole file all CRLF.
 */
function crlfLinesNote(crlfLines: readonly number[], lfLines: number, partial: boolean): string | null {
  if (crlfLines.length === 0 || (lfLines === 0 && !partial)) return null;
  const runs: string[] = [];
  let first = crlfLines[0] as number;
  for (let i = 1; i <= crlfLines.length; i++) {
    const last = crlfLines[i - 1] as number;
    if (crlfLines[i] === last + 1) continue;
    runs.push(first === last ? String(first) : `${first}-${last}`);
    first = crlfLines[i] as number;
  }
  const named = runs.length > MAX_NOTED_RUNS ? `${runs.slice(0, MAX_NOTED_RUNS).join(", ")}, …` : runs.join(", ");
  if (lfLines > 0) {
    return (
      "[note: the lines shown end both in CRLF (\\r\\n) and in LF (\\n), both shown as plain line ends; " +
      `those ending in CRLF: ${named}]`
    );
  }
  return (
    "[note: this read did not cover the whole file, whose other lines may end in LF (\\n); CRLF (\\r\\n) is " +
    `shown as a plain line end; lines ending in CRLF among those shown: ${named}]`
  );
}

const abortedOutcome = (display: string, signal: AbortSignal): ToolOutcome =>
  toolError(ToolErrorCode.readAborted, `reading "${display}" was stopped because ${stopCause(signal)}`, false);
