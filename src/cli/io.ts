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

/** All of `stream` as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8");
}
