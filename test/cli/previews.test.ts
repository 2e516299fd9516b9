/**
 * The one-line previews the client shows of a tool call's input, a tool's result and an
 * approval's reason (`preview` in printable.ts) are text from the model or a tool. They once
 * stripped trailing newlines with /\n+$/, which V8 runs in time quadratic in a run of newlines
 * that is not at the end: a call's JSON arguments with 300,000 newlines between two tokens froze
 * the client for minutes, Ctrl-C included (a raw-mode terminal's keys are read by the blocked
 * event loop). Now a preview costs time in proportion to the text's length.
 *
 * The long cases run in a child process killed after CHILD_LIMIT_MS, so that a quadratic
 * preview fails the test instead of blocking its worker: linear ones take milliseconds.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { preview } from "../../src/cli/printable.js";

const CHILD_LIMIT_MS = 15_000;
const transcriptJs = fileURLToPath(new URL("../../dist/src/cli/transcript.js", import.meta.url));
const terminalOutJs = fileURLToPath(new URL("../../dist/src/cli/terminal-out.js", import.meta.url));

/** Runs `events` through a Transcript (the built one) in a child node; its notes, or the signal that killed it. */
function notesOfChild(events: string) {
  const script = `
    const { Transcript } = await import(${JSON.stringify(transcriptJs)});
    const { Outputs } = await import(${JSON.stringify(terminalOutJs)});
    const notes = [];
    const transcript = new Transcript(new Outputs({ write() {} }, { write: (line) => notes.push(line) }));
    for (const event of ${events}) transcript.show(event);
    process.stdout.write(JSON.stringify(notes));
  `;
  // The script is long (the events' text): given on stdin, past an argument's length limit.
  const result = spawnSync(process.execPath, ["--input-type=module"], {
    input: script,
    timeout: CHILD_LIMIT_MS,
    encoding: "utf8",
  });
  // Killed at the limit: said by the signal.
  if (result.error && result.signal === null) throw result.error;
  return { notes: result.signal === null ? (JSON.parse(result.stdout) as string[]) : null, signal: result.signal };
}

describe("a preview of text from the model or a tool", () => {
  it("is its first line, cut, with how many lines follow (trailing newlines not counted)", () => {
    expect(preview("one\ntwo\nthree\n\n\n")).toBe("one (+2 lines)");
    expect(preview("one\n\ntwo")).toBe("one (+2 lines)");
    expect(preview("one\ntwo")).toBe("one (+1 line)");
    expect(preview("only\n\n")).toBe("only");
    expect(preview("\n\n\n")).toBe("");
    expect(preview("")).toBe("");
    expect(preview("\nafter")).toBe(" (+1 line)");
    expect(preview("abcdef\nx", 3)).toBe("abc... (+1 line)");
    expect(preview("a\u001b[2Jb")).toBe("a\\u001b[2Jb");
  });

  it("of a call's JSON arguments with 300,000 newlines between two tokens is shown at once", () => {
    const input = `{"path":${"\n".repeat(300_000)}"."}`;
    const { notes, signal } = notesOfChild(`[
      { type: "message", message: { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "list_files", input: ${JSON.stringify(input)} }] } },
      { type: "tool.started", toolCallId: "call_1", tool: "list_files" },
    ]`);
    expect(signal).toBeNull();
    expect(notes).toEqual(['[tool] list_files {"path": (+300000 lines)\n']);
  });

  it("of a tool result of 300,000 blank lines and a last one is shown at once", () => {
    const content = `${"\n".repeat(300_000)}last`;
    const { notes, signal } = notesOfChild(`[
      { type: "message", message: { role: "tool", toolCallId: "call_1", content: ${JSON.stringify(content)}, isError: false } },
    ]`);
    expect(signal).toBeNull();
    expect(notes).toEqual(["[tool] call_1 done:  (+300000 lines)\n"]);
  });
});
