import { type ToolOutcome, toolError } from "../agent/tool.js";
import { errnoCode, isOutOfDescriptors } from "../errno.js";
import { ToolErrorCode } from "./error-codes.js";

/**
 * The process is out of file descriptors (`code`, EMFILE or ENFILE) for `what`: nothing is
 * wrong with the workspace or the call, and a later call may succeed.
 */
export const outOfDescriptorsOutcome = (code: string, what: string): ToolOutcome =>
  toolError(
    ToolErrorCode.ioError,
    `the server has no file descriptor left to ${what} (${code}); try again shortly`,
    true,
  );

/**
 * Maps a file-system error met while working on `displayPath` (the path as the model
 * gave it) to an error result. Unknown errors become IO_ERROR naming only the system
 * code: the exception text may contain absolute server paths. A process out of descriptors
 * is IO_ERROR too, retryable.
 */
export function fsErrorOutcome(err: unknown, displayPath: string): ToolOutcome {
  const code = errnoCode(err);
  if (isOutOfDescriptors(code)) return outOfDescriptorsOutcome(code, `work on "${displayPath}"`);
  switch (code) {
    case "ENOENT":
      return toolError(ToolErrorCode.notFound, `"${displayPath}" does not exist`, true);
    case "ENOTDIR":
      return toolError(ToolErrorCode.notADirectory, `a component of "${displayPath}" is not a directory`, true);
    case "EISDIR":
      return notAFileOutcome(displayPath, true);
    case "ELOOP":
      return toolError(ToolErrorCode.symlinkLoop, `"${displayPath}" leads into a symbolic-link loop`, false);
    case "ENAMETOOLONG":
      return toolError(ToolErrorCode.invalidPath, `"${displayPath}" is too long a path`, true);
    case "EACCES":
    case "EPERM":
      return toolError(ToolErrorCode.ioError, `permission denied on "${displayPath}"`, false);
    default:
      return toolError(ToolErrorCode.ioError, `file-system error on "${displayPath}" (${code ?? "unknown"})`, false);
  }
}

/**
 * The result for a path that exists but is not a regular file; `special` names what it is
 * when known (see specialFileKind).
 */
export function notAFileOutcome(displayPath: string, isDirectory: boolean, special: string | null = null): ToolOutcome {
  return toolError(
    ToolErrorCode.notAFile,
    isDirectory
      ? `"${displayPath}" is a directory, not a file; use list_files`
      : `"${displayPath}" is ${special === null ? "not" : `${special}, not`} a regular file`,
    true,
  );
}

interface FileTypeTests {
  isFIFO(): boolean;
  isSocket(): boolean;
  isBlockDevice(): boolean;
  isCharacterDevice(): boolean;
}

/** A special file's kind in words ("a FIFO (named pipe)"), as list_files marks them; null for any other entry. */
export function specialFileKind(info: FileTypeTests): string | null {
  if (info.isFIFO()) return "a FIFO (named pipe)";
  if (info.isSocket()) return "a socket";
  if (info.isBlockDevice()) return "a block device";
  return info.isCharacterDevice() ? "a character device" : null;
}
