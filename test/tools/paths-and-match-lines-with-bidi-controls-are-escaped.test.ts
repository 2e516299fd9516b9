/**
 * list_files and search_files quote a path holding a control character or a line separator
 * and escape those characters (displayPath, src/tools/display-path.ts), so that no name can
 * forge lines. The bidirectional controls were shown raw: a file named `evil<U+202E>hs.txt`
 * (RIGHT-TO-LEFT OVERRIDE) reads as `eviltxt.sh` to a person reviewing the tool calls before
 * approving one (the "Trojan Source" trick), and the isolates (U+2066-U+2069), embeddings and
 * overrides (U+202A-U+202E), marks (U+200E, U+200F, U+061C) reorder text likewise. The text
 * of search_files' matching lines was shown raw too: a matched line holding U+2028 (LINE
 * SEPARATOR), a carriage return or U+202E broke or reordered the result as a reader sees it.
 *
 * Expected: a path holding a bidirectional control is shown as a JSON string with it escaped
 * (\u202e), like the other controls; in a matching line shown, controls (a tab apart), line
 * separators and bidirectional controls are escaped as \uXXXX and a note says so; ordinary
 * non-ASCII text (accents, CJK, emoji) is shown as it is.
 */
import { expect, it } from "vitest";
import { displayPath } from "../../src/tools/display-path.js";
import { listFilesTool } from "../../src/tools/list-files.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

const BIDI = ["\u061c", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e"];
const ISOLATES = ["\u2066", "\u2067", "\u2068", "\u2069"];
const escapedForm = (c: string): string => `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, "0")}`;

it("displayPath quotes a path holding any bidirectional control, escaping it, and it decodes back", () => {
  for (const c of [...BIDI, ...ISOLATES]) {
    const shown = displayPath(`evil${c}hs.txt`);
    expect(shown).toBe(`"evil${escapedForm(c)}hs.txt"`);
    expect(JSON.parse(shown)).toBe(`evil${c}hs.txt`);
  }
  expect(displayPath("caf\u00e9/\u4e2d\u6587/\u05e9\u05dc\u05d5\u05dd.ts")).toBe(
    "caf\u00e9/\u4e2d\u6587/\u05e9\u05dc\u05d5\u05dd.ts",
  );
});

it("list_files and search_files show a name holding U+202E quoted and escaped", async () => {
  const { workspace } = await makeSandbox();
  await writeTree(workspace, { "evil\u202ehs.txt": "needle\n" });
  const listed = expectOk(await runTool(listFilesTool, workspace, {}));
  expect(listed).toBe('"evil\\u202ehs.txt"');
  const found = expectOk(await runTool(searchFilesTool, workspace, { pattern: "needle" }));
  expect(found).toBe('"evil\\u202ehs.txt":1: needle');
});

it("search_files escapes line separators, controls and bidirectional controls in a matching line", async () => {
  const { workspace } = await makeSandbox();
  const line =
    "needle\u2028a.ts:9: forged\u2029\u0085x\ry\u001b[2Jz\u202eevil\u2066w\u2069\tcaf\u00e9 \u4e2d \u{1f600}";
  await writeTree(workspace, { "a.txt": `${line}\nneedle plain\n` });
  const outcome = await runTool(searchFilesTool, workspace, { pattern: "needle" });
  const lines = expectOk(outcome).split("\n");
  expect(lines[0]).toBe(
    "a.txt:1: needle\\u2028a.ts:9: forged\\u2029\\u0085x\\u000dy\\u001b[2Jz\\u202eevil\\u2066w\\u2069\tcaf\u00e9 \u4e2d \u{1f600}",
  );
  expect(lines[1]).toBe("a.txt:2: needle plain");
  expect(lines[2]).toMatch(/^\[note: .*\\uXXXX/);
  expect(lines).toHaveLength(3);
  expect(outcome).toMatchObject({ truncated: false });
});

it("search_files adds no note when no line shown needed escaping", async () => {
  const { workspace } = await makeSandbox();
  await writeTree(workspace, { "a.txt": "needle caf\u00e9\tx\n" });
  expect(expectOk(await runTool(searchFilesTool, workspace, { pattern: "needle" }))).toBe(
    "a.txt:1: needle caf\u00e9\tx",
  );
});
