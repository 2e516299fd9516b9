import { displayLine, displayPath, LONG_PATH_CHARS } from "./display-path.js";
import { OutputLines } from "./output-lines.js";
import type { SearchMatch, SearchWorkerData } from "./search-worker-source.js";

/**
 * The match lines, `file:line: text`, a file's long path written once above its matches
 * (LONG_PATH_CHARS), each text as displayLine shows it, up to `maxChars`: how many matches
 * they show, whether displayLine escaped characters in one of them, and the files whose lines
 * they show, by their paths (not as displayed; see ToolOutcome's `files`).
 */
export function showMatches({
  matches,
  files,
  maxChars,
}: {
  matches: SearchMatch[];
  files: SearchWorkerData["files"];
  maxChars: number;
}): { lines: string[]; count: number; escaped: boolean; files: string[] } {
  const out = new OutputLines(maxChars);
  const shownFiles = new Set<string>();
  let count = 0;
  let escaped = false;
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
    const text = displayLine(match.text);
    const added =
      header !== null ? out.add(`  ${match.line}: ${text}`, header) : out.add(`${path}:${match.line}: ${text}`);
    if (!added) break;
    count++;
    escaped ||= text !== match.text;
    shownFiles.add(relative);
  }
  return { lines: out.lines, count, escaped, files: [...shownFiles] };
}
