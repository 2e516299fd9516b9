/**
 * The lines of a tool's output, at most `maxChars` characters in all (the newlines between
 * them included): a line that would pass it is refused, and so is every line after it, so
 * the output is a prefix of what the tool would show and the caller says what was left out.
 *
 * A line may belong under a header (a long path, see LONG_PATH_CHARS): the header is written
 * before it unless the line before was under the same header; a header and its first line
 * are added together or not at all.
 */
export class OutputLines {
  readonly lines: string[] = [];
  /** True once a line was refused for the cap. */
  full = false;
  private chars = 0;
  private header: string | null = null;

  constructor(private readonly maxChars: number) {}

  /** Adds `line` (under `header` when given); false when it does not fit (nothing is added). */
  add(line: string, header: string | null = null): boolean {
    if (this.full) return false;
    const opens = header !== null && header !== this.header;
    const added = [...(opens ? [header] : []), line];
    const chars = added.reduce((sum, text) => sum + text.length + 1, 0);
    // The first line has no newline before it.
    if (this.chars + chars - (this.lines.length === 0 ? 1 : 0) > this.maxChars) {
      this.full = true;
      return false;
    }
    this.lines.push(...added);
    this.chars += chars;
    this.header = header;
    return true;
  }
}
