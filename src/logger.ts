import pino, { type Logger } from "pino";

/** JSON logs; credentials never reach them. */
export function createLogger({ level }: { level: string }): Logger {
  return pino({
    level,
    redact: {
      paths: ["req.headers.authorization", "headers.authorization", "authorization", "apiKey", "*.apiKey"],
      censor: "[redacted]",
    },
  });
}
