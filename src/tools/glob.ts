/**
 * Compiles a glob to an anchored RegExp, or returns null when the glob is malformed
 * (unclosed `[` or `{`, or a range out of order such as `[z-a]`). Supported: `*` (any run of characters except `/`), `**` (any
 * number of whole path segments, including none, when it forms a segment: `**` + `/`,
 * or a trailing `**`), `?` (one character except `/`), `[abc]`, `[a-z]`, `[!abc]`, and
 * `{a,b}` alternatives (nestable). Everything else matches literally.
 */
export function globToRegExp(glob: string): RegExp | null {
  let out = "";
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const atSegmentStart = i === 0 || glob[i - 1] === "/";
        if (atSegmentStart && glob[i + 2] === "/") {
          out += "(?:[^/]*/)*";
          i += 2;
          continue;
        }
        if (atSegmentStart && i + 2 === glob.length) {
          out += ".*";
          i += 1;
          continue;
        }
      }
      out += "[^/]*";
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "[") {
      const close = glob.indexOf("]", i + 2);
      if (close === -1) return null;
      let body = glob.slice(i + 1, close);
      const negate = body.startsWith("!") || body.startsWith("^");
      if (negate) body = body.slice(1);
      out += `[${negate ? "^" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
      i = close;
    } else if (c === "{") {
      braces++;
      out += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (c === "," && braces > 0) {
      out += "|";
    } else {
      out += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    }
  }
  if (braces > 0) return null;
  try {
    return new RegExp(`^${out}$`);
  } catch {
    return null;
  }
}

/**
 * What a search keeps: the glob's anchored RegExp source, and whether it is matched against
 * the file name alone (a glob without `/`: `*.ts` matches at any depth) or the whole path
 * relative to the workspace root (a glob with `/`; a leading `./` names that root, so
 * `./*.ts` matches the root's files only). Null when the glob is malformed. The RegExp may
 * backtrack badly (`*a*a*a*b` on a long name), so it runs where a time limit can stop it: in
 * the search worker.
 */
export function globFilter(glob: string): { source: string; nameOnly: boolean } | null {
  const regex = globToRegExp(glob.startsWith("./") ? glob.slice(2) : glob);
  if (!regex) return null;
  return { source: regex.source, nameOnly: !glob.includes("/") };
}
