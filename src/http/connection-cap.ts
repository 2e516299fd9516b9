import type { Server, Socket } from "node:net";
import { CountedWarning, type WarnLogger } from "./counted-warning.js";

/** Over-cap connections and drops are logged at most once per this many ms, with how many there were. */
export const DROP_LOG_INTERVAL_MS = 10_000;

/** The connections the metrics port (METRICS_PORT) holds at most: scrapers need a few. */
export const METRICS_MAX_CONNECTIONS = 16;

/**
 * The connections PORT accepts past MAX_CONNECTIONS, each only to be answered once and closed
 * (see answerOverCap): a liveness probe still gets /healthz from a server that is only full,
 * and other clients a 503 saying why, instead of a reset.
 */
export const OVER_CAP_SLOTS = 16;

/**
 * How long a connection over the cap is held at most, whatever it sends or does not send: a
 * client that sends its request slowly, or reads the answer slowly, cannot keep a slot.
 */
export const OVER_CAP_DEADLINE_MS = 2_000;

/**
 * Whether a connection is over the cap (in one of the `overCapSlots`), asked as its request
 * comes: one accepted over the cap when room has been made since is held as any other then.
 */
export type OverCap = (socket: Socket) => boolean;

const NEVER_OVER: OverCap = () => false;

/**
 * Caps the connections `server` holds at once at `max` (0: no cap), whoever opened them, so that
 * connections alone cannot take the descriptors the server's own work needs (MAX_CONNECTIONS).
 * Past it, up to `overCapSlots` more are accepted as over the cap (the returned predicate says
 * which), each destroyed OVER_CAP_DEADLINE_MS after it was accepted if it has not closed by
 * then; with those taken, a new one takes the place of the oldest, which is dropped (so
 * clients that keep reconnecting cannot keep the newest out: a liveness probe is answered).
 * Without over-cap slots (the metrics port), Node closes each new connection past the cap as
 * soon as it is accepted (the client sees it reset, before a byte is read). A connection
 * closing makes room for the next.
 *
 * While connections come over the cap, `log` gets a warning at once, then at most one every
 * DROP_LOG_INTERVAL_MS with how many were over it (`overCap`) and how many of those were
 * dropped (`dropped`) since the last (none when none were); `portSetting` names the port in it.
 */
export function capConnections(
  server: Server,
  max: number,
  log: WarnLogger,
  {
    portSetting = "PORT",
    overCapSlots = 0,
    onOverCap,
  }: {
    portSetting?: string;
    overCapSlots?: number;
    /**
     * For the metrics: told `over_cap` of every connection past the cap, and `dropped` of each
     * of those closed unanswered (at once, or later to make room for a newer one).
     */
    onOverCap?: (fact: { port: string; kind: "over_cap" | "dropped" }) => void;
  } = {},
): OverCap {
  if (max === 0) return NEVER_OVER;
  // Node drops what comes past both at once, before making a socket of it; one more reaches
  // the handler below, which makes room for it by dropping the oldest over the cap.
  server.maxConnections = max + (overCapSlots > 0 ? overCapSlots + 1 : 0);
  /** The connections over the cap, oldest first, with their deadlines. */
  const over = new Map<Socket, NodeJS.Timeout>();
  let held = 0;
  const warning = new CountedWarning({
    log,
    message: "connections over the cap: the server holds as many as it may at once",
    everyMs: DROP_LOG_INTERVAL_MS,
    kinds: ["overCap", "dropped"],
    fields: { port: portSetting, maxConnections: max },
  });
  /** One more connection over the cap, and how many were dropped unanswered for it (itself, or the oldest). */
  const count = (dropped: number) => {
    onOverCap?.({ port: portSetting, kind: "over_cap" });
    if (dropped > 0) onOverCap?.({ port: portSetting, kind: "dropped" });
    warning.count({ overCap: 1, dropped });
  };
  const release = (socket: Socket) => {
    clearTimeout(over.get(socket));
    over.delete(socket);
  };
  server.on("connection", (socket: Socket) => {
    if (held < max) {
      held++;
      socket.once("close", () => held--);
    } else if (overCapSlots > 0) {
      let evicted = 0;
      if (over.size >= overCapSlots) {
        // The oldest has had the longest to be answered: a client reconnecting as fast as its
        // connections are cut cannot keep a liveness probe out.
        const [oldest] = over.keys();
        if (oldest) {
          release(oldest);
          oldest.destroy();
          evicted = 1;
        }
      }
      over.set(socket, setTimeout(() => socket.destroy(), OVER_CAP_DEADLINE_MS).unref());
      socket.once("close", () => release(socket));
      count(evicted);
    } else {
      // Node counts a socket out as it starts closing, this once it has closed: in between,
      // Node may let one more in than there is room for.
      socket.destroy();
      count(1);
    }
  });
  server.on("drop", () => count(1));
  server.on("close", () => warning.close());
  return (socket) => {
    if (!over.has(socket)) return false;
    // Room has come since it was accepted (a connection under the cap closed): it is held as
    // any other, not refused for a count that no longer holds.
    if (held >= max) return true;
    release(socket);
    held++;
    socket.once("close", () => held--);
    return false;
  };
}
