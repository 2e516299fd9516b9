import type { Server } from "node:net";

/** Dropped connections are logged at most once per this many ms, with how many there were. */
export const DROP_LOG_INTERVAL_MS = 10_000;

/** The connections the metrics port (METRICS_PORT) holds at most: scrapers need a few. */
export const METRICS_MAX_CONNECTIONS = 16;

interface WarnLogger {
  warn(fields: object, message: string): void;
}

/**
 * Caps the connections `server` holds at once at `max` (0: no cap), whoever opened them: past
 * it Node closes each new connection as soon as it is accepted (the client sees it reset,
 * before a byte is read), so connections alone cannot take the descriptors the server's own
 * work needs (MAX_CONNECTIONS). A connection closing makes room for the next.
 *
 * While connections are dropped, `log` gets a warning at once, then at most one every
 * DROP_LOG_INTERVAL_MS with how many were dropped since the last (none when none were);
 * `portSetting` names the port in it.
 */
export function capConnections(server: Server, max: number, log: WarnLogger, portSetting = "PORT"): void {
  if (max === 0) return;
  server.maxConnections = max;
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  // Logs what was dropped since the last warning, and looks again an interval later.
  const report = () => {
    timer = undefined;
    if (dropped === 0) return;
    log.warn(
      { port: portSetting, dropped, maxConnections: max },
      "connections dropped: the server holds as many as it may at once",
    );
    dropped = 0;
    timer = setTimeout(report, DROP_LOG_INTERVAL_MS).unref();
  };
  server.on("drop", () => {
    dropped++;
    if (timer === undefined) report();
  });
  server.on("close", () => clearTimeout(timer));
}
