/**
 * `.dockerignore` as Docker's builder applies it (moby/patternmatcher), for the pattern forms
 * Go's filepath.Match knows plus `**`: each line a pattern (blank lines and `#` comments
 * skipped), cleaned (leading `/` and `./`, trailing `/` dropped); `!` re-includes; a pattern
 * matches a path when it matches the path or one of its parent directories; the last pattern
 * that matches decides. Paths are relative to the context, `/`-separated.
 */
export interface IgnoreRule {
  exclude: boolean;
  pattern: RegExp;
  source: string;
}

/** One pattern as a regular expression: `*` and `?` stay within a path segment, `**` crosses them. */
function compile(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === "*" && glob[i + 1] === "*") {
      // `**/` also matches no directory at all.
      out += glob[i + 2] === "/" ? "(?:.*/)?" : ".*";
      i += glob[i + 2] === "/" ? 2 : 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else if (c === "[") {
      const end = glob.indexOf("]", i + 1);
      if (end < 0) throw new Error(`unterminated [ in .dockerignore pattern ${glob}`);
      out += `[${glob.slice(i + 1, end).replace(/\\/g, "\\\\")}]`;
      i = end;
    } else if (c === "\\") {
      out += `\\${glob[++i] ?? "\\"}`;
    } else out += c.replace(/[.+^${}()|\]]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

/** The rules of a `.dockerignore` text, in order. */
export function parseDockerignore(text: string): IgnoreRule[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const exclude = !line.startsWith("!");
      const cleaned = (exclude ? line : line.slice(1).trim())
        .replace(/^\/+/, "")
        .replace(/^(\.\/)+/, "")
        .replace(/\/+$/, "");
      return { exclude, pattern: compile(cleaned), source: line };
    });
}

/** Whether `path` (relative to the context) is left out of the build context. */
export function isExcluded(rules: IgnoreRule[], path: string): boolean {
  const parts = path.split("/");
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join("/"));
  let excluded = false;
  for (const rule of rules) {
    if (candidates.some((candidate) => rule.pattern.test(candidate))) excluded = rule.exclude;
  }
  return excluded;
}
