import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { FakeReply } from "../fakes/openai-upstream.js";

const DIR = join(import.meta.dirname, "..", "fixtures", "providers");

/**
 * A stream from test/fixtures/providers (provenance in SOURCES.md) as the fake upstream's
 * reply, byte for byte. A `.sse` file is a whole response body and goes out one event per
 * write. A `.chunks.txt` file holds one recorded chunk per line, the form the Vercel AI SDK
 * keeps its recordings in; it is framed as that SDK's own test harness replays it, each line
 * as `data: <line>` and a final `data: [DONE]`.
 */
export function recorded(file: string): FakeReply {
  const text = recordedText(file);
  if (file.endsWith(".chunks.txt")) {
    const lines = text.split("\n").filter((line) => line.trim() !== "");
    return { raw: [...lines.map((line) => `data: ${line}\n\n`), "data: [DONE]\n\n"] };
  }
  return { raw: text.split(/(?<=\n\n)/) };
}

/** A file of test/fixtures/providers as it is (a recorded request body, for instance). */
export function recordedText(file: string): string {
  return readFileSync(join(DIR, file), "utf8");
}
