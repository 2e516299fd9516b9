/**
 * `agent-server run -` read the prompt from stdin to its end, however long: a stdin that does
 * not end (`run - < /dev/zero`, `yes | agent-server run -`) was kept in memory until the machine
 * ran out of it, though no server takes a run's input past its BODY_LIMIT_BYTES (at most
 * 100 MiB). Now it reads at most that and one byte more, and refuses a longer prompt as a usage
 * error (exit 64) that says the limit.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { CliError } from "../../src/cli/cli-error.js";
import { EXIT } from "../../src/cli/exit-codes.js";
import { type CliIo, MAX_PROMPT_BYTES, readPrompt } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";

const MIB = 1024 * 1024;

/** A stdin of `chunk` again and again (the same buffer: it costs no memory), ending after `total` bytes; counts what was pulled. */
function endlessStdin(chunk: Buffer, total: number) {
  const stdin = Object.assign(
    new Readable({
      read() {
        if (stdin.pulled >= total) {
          this.push(null);
          return;
        }
        stdin.pulled += chunk.length;
        this.push(chunk);
      },
    }),
    { pulled: 0 },
  );
  return stdin;
}

describe("a prompt read from stdin", () => {
  it("is read up to what a server could take, not to the end of a stdin that goes on (exit 64)", async () => {
    expect(MAX_PROMPT_BYTES).toBe(100 * MIB);
    // 200 MiB (think /dev/zero): the test ends it there.
    const stdin = endlessStdin(Buffer.alloc(MIB, "y"), 200 * MIB);
    const stderr: string[] = [];
    const io = {
      stdin,
      stdout: { write: () => true },
      stderr: { write: (text: string) => stderr.push(text) },
      // Nothing answers there: had the prompt been taken, the client would fail otherwise.
      env: { AGENT_URL: "http://127.0.0.1:1" },
      onInterrupt: () => () => {},
    } as unknown as CliIo;
    expect(await main(["run", "-"], io)).toBe(EXIT.usage);
    expect(stdin.pulled).toBeLessThanOrEqual(MAX_PROMPT_BYTES + MIB);
    expect(stderr.join("")).toMatch(/the prompt read from stdin is longer than 100 MiB/);
  });

  it("is taken whole up to the limit, and refused one byte past it", async () => {
    const chunk = Buffer.from("abcdefgh");
    expect(await readPrompt({ stream: endlessStdin(chunk, 64), maxBytes: 64 })).toBe("abcdefgh".repeat(8));
    const error = await readPrompt({ stream: Readable.from([Buffer.from("x".repeat(65))]), maxBytes: 64 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CliError);
    expect(error).toMatchObject({ exitCode: EXIT.usage });
    const longer = endlessStdin(chunk, 1000);
    await expect(readPrompt({ stream: longer, maxBytes: 64 })).rejects.toThrow(CliError);
    expect(longer.pulled).toBeLessThanOrEqual(64 + chunk.length);
  });
});
