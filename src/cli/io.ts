import { mebibytes } from "./bounded-read.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import type { OutStream } from "./terminal-out.js";

/** What the client touches of its process, so that a test can hand it other streams. */
export interface CliIo {
  /** `setRawMode` on a terminal (as process.stdin has it). */
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: NodeJS.WritableStream & OutStream;
  stderr: NodeJS.WritableStream & OutStream;
  env: NodeJS.ProcessEnv;
  /** Calls `handler` on each SIGINT (Ctrl-C) until the returned function is called. */
  onInterrupt(handler: () => void): () => void;
}

export function processIo(): CliIo {
  return {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    onInterrupt(handler) {
      process.on("SIGINT", handler);
      return () => process.off("SIGINT", handler);
    },
  };
}

/**
 * The most of a prompt read from stdin (`run -`): what a server takes at most, the largest
 * BODY_LIMIT_BYTES (100 MiB). A longer one no server would take.
 */
export const MAX_PROMPT_BYTES = 100 * 1024 * 1024;

/**
 * All of `stream` as UTF-8 text, at most `maxBytes` of it: past that, reading stops (the stream
 * is destroyed, nothing more is pulled or kept) and the prompt is refused as a usage `CliError`
 * that says the limit. A stdin that never ends (`run - < /dev/zero`) costs no more than that.
 */
export async function readPrompt({
  stream,
  maxBytes = MAX_PROMPT_BYTES,
}: {
  stream: NodeJS.ReadableStream;
  maxBytes?: number;
}): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    bytes += buffer.length;
    // Leaving the loop destroys the stream.
    if (bytes > maxBytes) {
      throw new CliError(
        `the prompt read from stdin is longer than ${mebibytes(maxBytes)}, more than an agent server takes`,
        EXIT.usage,
      );
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, bytes).toString("utf8");
}
