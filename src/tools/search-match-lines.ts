import { displayPath, LONG_PATH_CHARS } from "./display-path.js";
import { OutputLines } from "./output-lines.js";
import type { SearchMatch, SearchWorkerData } from "./search-worker-source.js";

/**
 * The match lines, `file:line: text`, a file's long path written once above its matches
 * (LONG_PATH_CHARS), up to `maxChars`: how many matches they show, and the files
 * whose lines they show, by their paths (not as displayed; see ToolOutcome's `files`).
 */
export function showMatches({
  matches,
  files,
  maxChars,
}: {
  matches: SearchMatch[];
  files: SearchWorkerData["files"];
  maxChars: number;
}): { lines: string[]; count: number; files: string[] } {
  const out = new OutputLines(maxChars);
  const shownFiles = new Set<string>();
  let count = 0;
  // The file of the match before, its path as shown, and its header when the path is long.
  let lastFile = -1;
  let path = "";
  let header: string | null = null;
  for (const match of matches) {
    const relative = files[match.file]?.relative ?? "";
    if (match.file !== lastFile) {
      lastFile = match.file;
      path = displayPath(relative);
      header = path.length > LONG_PATH_CHARS ? `${path}:` : null;
    }
    const added =
      header !== null
        ? out.add(`  ${match.line}: ${match.text}`, header)
        : out.add(`${path}:${match.line}: ${match.text}`);
    if (!added) break;
    count++;
    shownFiles.add(relative);
  }
  return { lines: out.lines, count, files: [...shownFiles] };
}
