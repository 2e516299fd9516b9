/**
 * Stable error codes of the workspace tools' error results. They are part of the
 * contract with the model and with clients reading tool-result metadata: never
 * rename one, only add.
 */
export const ToolErrorCode = {
  /** The path resolves (through `..`, an absolute path or a symlink) outside the workspace. */
  pathOutsideWorkspace: "PATH_OUTSIDE_WORKSPACE",
  /** The path is malformed (e.g. contains a NUL byte). */
  invalidPath: "INVALID_PATH",
  /** Resolving the path met a symbolic-link loop. */
  symlinkLoop: "SYMLINK_LOOP",
  /** The session's workspace directory itself is missing or unreadable. */
  workspaceUnavailable: "WORKSPACE_UNAVAILABLE",
  notFound: "NOT_FOUND",
  notAFile: "NOT_A_FILE",
  notADirectory: "NOT_A_DIRECTORY",
  binaryFile: "BINARY_FILE",
  invalidLineRange: "INVALID_LINE_RANGE",
  fileTooLarge: "FILE_TOO_LARGE",
  /** edit_file: `oldText` does not occur in the file. */
  noMatch: "NO_MATCH",
  /** edit_file: `oldText` occurs several times and `replaceAll` was not set. */
  ambiguousMatch: "AMBIGUOUS_MATCH",
  /** search_files: the pattern is not a valid JavaScript regular expression (or the glob is malformed). */
  invalidPattern: "INVALID_PATTERN",
  searchTimeout: "SEARCH_TIMEOUT",
  /** search_files: the run was cancelled (or ran out of time) mid-search; the message says which. */
  searchAborted: "SEARCH_ABORTED",
  /** search_files: the search failed other than by a file-system error (e.g. out of memory); the message names the error. */
  searchFailed: "SEARCH_FAILED",
  /** shell: the command exited non-zero, was killed by a signal, or could not start. */
  shellFailed: "SHELL_FAILED",
  shellTimeout: "SHELL_TIMEOUT",
  /** shell: the run was cancelled (or ran out of time) before or while the command ran; the message says which. */
  shellAborted: "SHELL_ABORTED",
  /** read_file: the run was cancelled (or ran out of time) while the file was being read; the message says which. */
  readAborted: "READ_ABORTED",
  /** list_files: the run was cancelled (or ran out of time) while the tree was being walked; the message says which. */
  listAborted: "LIST_ABORTED",
  /** An unexpected file-system error (permissions, I/O); the message names the system code. */
  ioError: "IO_ERROR",
} as const;

export type ToolErrorCode = (typeof ToolErrorCode)[keyof typeof ToolErrorCode];
