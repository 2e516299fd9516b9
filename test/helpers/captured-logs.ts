import { Writable } from "node:stream";
import type { Logger } from "pino";
import { createLogger } from "../../src/logger.js";

/**
 * The server's own logger (info level) writing into `lines`, for tests that read the log;
 * `secrets` (as configSecrets gives them) are redacted from its lines as the server's are.
 */
export function capturedLogs({ secrets }: { secrets?: readonly string[] } = {}): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, logger: createLogger({ level: "info", destination: sink, ...(secrets ? { secrets } : {}) }) };
}
