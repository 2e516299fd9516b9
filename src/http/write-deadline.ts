import type { ServerResponse } from "node:http";
import type { Server, Socket } from "node:net";
import { CountedWarning, type WarnLogger } from "./counted-warning.js";

/** Cuts are logged at most once per this many ms, with how many there were. */
export const CUT_LOG_INTERVAL_MS = 10_000;

/** Responses that stay open by design (event streams): never cut by the write deadline. */
const longLived = new WeakSet<ServerResponse>();

/**
 * Leaves `response` (an event stream) out of the write deadline: a watcher that stops reading
 * costs bounded memory already (its feed stops holding events and reads them back from the
 * store at the client's pace, see event-feed.ts), and an idle stream writes only heartbeats.
 */
export function exemptFromWriteDeadline(response: ServerResponse): void {
  longLived.add(response);
}

/** What a socket holds in the server's memory at a sweep: any change from one sweep to the next is progress. */
interface Held {
  /** Bytes written to the socket so far (handed over or buffered). */
  written: number;
  /** Bytes the socket holds that the system has not taken yet (buffered, or in a write under way). */
  pending: number;
  /** Of those, the bytes of the writes under way that the system has not taken (a big write is taken piecewise). */
  queued: number;
  /** When it was first seen holding exactly this (ms, Date.now). */
  since: number;
}

/** The libuv handle's bytes still to be written: it shrinks as the system takes a big write piecewise. */
function queuedBytes(socket: Socket): number {
  return (socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle?.writeQueueSize ?? 0;
}

/** The response a socket is answering now (Node's own field; null between requests). */
function answering(socket: Socket): ServerResponse | null {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? null;
}

/** How often sockets are looked at: a quarter of the deadline, at most once a second, at least every 10 ms. */
function sweepIntervalMs(timeoutMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(timeoutMs / 4)));
}

/**
 * Cuts the connections of `server` whose answer the client does not take (RESPONSE_WRITE_TIMEOUT_MS):
 * a socket that holds bytes of an answer in the server's memory and has not moved for
 * `timeoutMs` (none of them taken by the system for the client, nothing written) is reset and
 * destroyed, which frees what it holds, the system's socket buffers included. The deadline is
 * on progress, not on the whole answer: a client that keeps reading, however slowly, keeps
 * its connection (the system takes bytes from the server as the client's side makes room,
 * in pieces of up to a part of the socket buffer it sized for the link).
 *
 * Not cut: a socket holding nothing (a request being received, whose time REQUEST_TIMEOUT_MS
 * bounds; a handler at work; a `?wait=true` wait; an idle keep-alive connection), and event
 * streams (exemptFromWriteDeadline). One sweep every sweepIntervalMs looks at every open
 * socket, nothing is done per write: an answer is cut between `timeoutMs` and `timeoutMs`
 * plus two sweeps after it stopped moving.
 *
 * `log` gets a warning at the first cut, then at most one every CUT_LOG_INTERVAL_MS with how
 * many answers were cut since the last (`cut`).
 */
export function cutStalledAnswers(server: Server, timeoutMs: number, log: WarnLogger): void {
  const open = new Set<Socket>();
  const held = new Map<Socket, Held>();
  const warning = new CountedWarning({
    log,
    message: "answers cut: their clients took none of their bytes for RESPONSE_WRITE_TIMEOUT_MS",
    everyMs: CUT_LOG_INTERVAL_MS,
    kinds: ["cut"],
    fields: { responseWriteTimeoutMs: timeoutMs },
  });

  const sweep = () => {
    const now = Date.now();
    for (const socket of open) {
      const pending = socket.writableLength;
      if (pending === 0 || socket.destroyed) {
        held.delete(socket);
        continue;
      }
      const response = answering(socket);
      if (response !== null && longLived.has(response)) {
        held.delete(socket);
        continue;
      }
      const written = socket.bytesWritten;
      const queued = queuedBytes(socket);
      const last = held.get(socket);
      if (last === undefined || last.written !== written || last.pending !== pending || last.queued !== queued) {
        held.set(socket, { written, pending, queued, since: now });
      } else if (now - last.since >= timeoutMs) {
        held.delete(socket);
        open.delete(socket);
        cutSocket(socket);
        warning.count({ cut: 1 });
      }
    }
  };
  const sweeper = setInterval(sweep, sweepIntervalMs(timeoutMs)).unref();

  server.on("connection", (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => {
      open.delete(socket);
      held.delete(socket);
    });
  });
  server.on("close", () => {
    clearInterval(sweeper);
    warning.close();
  });
}

/** Closes `socket` with a reset: the system drops what it still held for the client instead of trying on. */
function cutSocket(socket: Socket): void {
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}
