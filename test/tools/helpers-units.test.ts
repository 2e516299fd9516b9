import { describe, expect, it } from "vitest";
import { globFilter, globToRegExp } from "../../src/tools/glob.js";
import { HeadTailBuffer } from "../../src/tools/head-tail-buffer.js";
import { LineWindow } from "../../src/tools/line-window.js";
import { shellEnvironment } from "../../src/tools/shell-env.js";

/** Applies a glob as the search worker does. */
function globMatches(glob: string, path: string): boolean | undefined {
  const rule = globFilter(glob);
  if (!rule) return undefined;
  return new RegExp(rule.source).test(rule.nameOnly ? path.slice(path.lastIndexOf("/") + 1) : path);
}

describe("globFilter", () => {
  it.each([
    ["*.ts", "src/a.ts", true],
    ["*.ts", "src/a.tsx", false],
    ["*.{js,mjs}", "lib/x.mjs", true],
    ["src/**/*.ts", "src/a.ts", true],
    ["src/**/*.ts", "src/deep/er/a.ts", true],
    ["src/**/*.ts", "other/src/a.ts", false],
    ["src/*.ts", "src/deep/a.ts", false],
    ["./src/*.ts", "src/a.ts", true],
    ["./*.ts", "a.ts", true],
    ["./*.ts", "src/a.ts", false],
    ["file?.txt", "file1.txt", true],
    ["[!a]*.md", "b.md", true],
    ["[!a]*.md", "a.md", false],
    ["docs/**", "docs/x/y.md", true],
    ["a.b", "axb", false],
  ])("%s on %s is %s", (glob, path, expected) => {
    expect(globMatches(glob, path)).toBe(expected);
  });

  it("returns null for a malformed glob", () => {
    expect(globToRegExp("*.{ts")).toBeNull();
    expect(globToRegExp("[abc")).toBeNull();
  });
});

describe("HeadTailBuffer", () => {
  it("keeps everything under the caps", () => {
    const buffer = new HeadTailBuffer(4, 4);
    buffer.push(Buffer.from("abc"));
    buffer.push(Buffer.from("defg"));
    expect([buffer.text(), buffer.omittedBytes]).toEqual(["abcdefg", 0]);
  });

  it("keeps the head and the tail of a long stream, counting the cut middle", () => {
    const buffer = new HeadTailBuffer(3, 4);
    for (const chunk of ["abcdef", "ghij", "k", "lmnopq"]) buffer.push(Buffer.from(chunk));
    expect(buffer.omittedBytes).toBe(17 - 7);
    expect(buffer.text()).toMatch(/^abc\n\[\.\.\. output cut: 10 bytes omitted .*\]\nnopq$/);
  });

  it("cuts between whole characters, counting the bytes of a split one as omitted", () => {
    // "€" is e2 82 ac: a head of 4 bytes ends inside the second, a tail of 4 starts inside one.
    const buffer = new HeadTailBuffer(4, 4);
    buffer.push(Buffer.from("€€€€€"));
    expect(buffer.omittedBytes).toBe(15 - 3 - 3);
    expect(buffer.text()).toBe(
      "€\n[... output cut: 9 bytes omitted from the middle (of 15 in all); showing the first 3 and the last 3 bytes ...]\n€",
    );
  });

  it("moves a cut at most 3 bytes through bytes that are not UTF-8", () => {
    const buffer = new HeadTailBuffer(5, 5);
    buffer.push(Buffer.alloc(20, 0x80));
    expect(buffer.omittedBytes).toBe(20 - 2 - 2);
    expect(buffer.text()).toContain("showing the first 2 and the last 2 bytes");
  });
});

describe("LineWindow", () => {
  const window = (startLine: number, endLine: number, chunks: string[]) => {
    const w = new LineWindow({ startLine, endLine, maxLines: 100, maxBytes: 10_000, maxLineChars: 5 });
    for (const chunk of chunks) if (!w.push(chunk)) break;
    return { lines: w.lines, total: w.end(), stoppedBy: w.stoppedBy };
  };

  it("splits lines across chunk boundaries and counts a final line without newline", () => {
    expect(window(1, Infinity, ["o", "ne\ntw", "o\nthr", "ee"])).toEqual({
      lines: ["     1\tone", "     2\ttwo", "     3\tthree"],
      total: 3,
      stoppedBy: null,
    });
  });

  it("keeps only the window and stops at its end", () => {
    expect(window(2, 2, ["a\nb\nc\n"])).toMatchObject({ lines: ["     2\tb"], stoppedBy: "range" });
  });

  it("cuts long lines, counting their dropped characters across chunks", () => {
    expect(window(1, Infinity, ["abcdefgh", "ij\n"]).lines).toEqual(["     1\tabcde… [line cut: 5 more characters]"]);
  });

  it("counts characters, not UTF-16 code units, in what it keeps and what it leaves out", () => {
    const e = "\u{1F600}";
    expect(window(1, Infinity, [`ab${e}${e}`, `${e}${e}${e}\n`]).lines).toEqual([
      `     1\tab${e}${e}${e}… [line cut: 2 more characters]`,
    ]);
  });

  it("takes a \\r right before \\n as the line's end, not its text, also split across chunks", () => {
    const w = new LineWindow({ startLine: 1, endLine: Infinity, maxLines: 100, maxBytes: 10_000, maxLineChars: 5 });
    for (const chunk of ["abcde\r\nfg\r", "\nh\r", "", "\ni\rj\r\r\nk\r"]) w.push(chunk);
    expect({ total: w.end(), lines: w.lines, crlf: w.crlfLines, lf: w.lfLines }).toEqual({
      total: 5,
      // Only a \r ending a line's text before its \n, or the input, stays text.
      lines: ["     1\tabcde", "     2\tfg", "     3\th", "     4\ti\rj\r", "     5\tk\r"],
      crlf: [1, 2, 3, 4],
      lf: 0,
    });
  });

  it("does not show a \\r the input stopped after (the first half of a line end, maybe)", () => {
    const w = new LineWindow({ startLine: 1, endLine: Infinity, maxLines: 100, maxBytes: 10_000, maxLineChars: 5 });
    w.push("a\nb\r");
    expect(w.cutShort()).toBe(2);
    expect(w.lines).toEqual(["     1\ta", "     2\tb… [line cut: not read to its end]"]);
  });
});

describe("shellEnvironment", () => {
  it("keeps only allow-listed variables and LC_*", () => {
    expect(
      shellEnvironment({ PATH: "/bin", HOME: "/h", LC_CTYPE: "C", OPENAI_API_KEY: "sk", AGENT_API_KEYS: "k", X: "y" }),
    ).toEqual({ PATH: "/bin", HOME: "/h", LC_CTYPE: "C" });
  });

  it("provides a standard PATH when the server has none", () => {
    expect(shellEnvironment({}).PATH).toMatch(/\/usr\/bin/);
  });
});
