import type { FastifyInstance, FastifyReply } from "fastify";
import { Deadline } from "../deadline.js";
import { StringTable } from "../string-table.js";

/** What a stream's last frame says when the server stops: clients reconnect and resume. */
export const RESTART_COMMENT = ": server restarting, reconnect to resume\n\n";
/** How long (at most) ending the open streams may take at shutdown before their sockets are closed anyway. */
const END_WAIT_MS = 1000;

/**
 * The event streams a server has open. At shutdown (Fastify's `preClose`, before the
 * sockets are closed) each gets a last comment and is ended as a whole response (the
 * chunked body terminated), so a client sees a clean end and reconnects with
 * `Last-Event-ID` instead of an error.
 */
export class OpenStreams {
  /** By a key of this table's own (a StringTable: streams come and go, see string-table.ts). */
  readonly #open = new StringTable<{ reply: FastifyReply; stop: () => void }>();
  #added = 0;

  /** Tracks an SSE reply until it closes; `stop` ends what feeds it. */
  add(reply: FastifyReply, stop: () => void): void {
    const key = `s${++this.#added}`;
    this.#open.set(key, { reply, stop });
    reply.raw.once("close", () => this.#open.delete(key));
  }

  get size(): number {
    return this.#open.size;
  }

  /**
   * Ends every open stream after RESTART_COMMENT; resolves when they were flushed, or after
   * END_WAIT_MS, or at `closeBy` (the shutdown's shared deadline), whichever comes first.
   */
  async endAll(closeBy = Deadline.NONE): Promise<void> {
    const ending = this.#open.values().map(
      ({ reply, stop }) =>
        new Promise<void>((resolve) => {
          const raw = reply.raw;
          stop();
          if (raw.writableEnded || raw.destroyed) return resolve();
          raw.once("finish", resolve);
          raw.once("close", resolve);
          raw.write(RESTART_COMMENT);
          // Stops the heartbeat and ends the response.
          if (reply.sse) reply.sse.close();
          else raw.end();
        }),
    );
    await closeBy.wait(Promise.all(ending), END_WAIT_MS);
  }
}

declare module "fastify" {
  interface FastifyInstance {
    openStreams: OpenStreams;
  }
}

/**
 * Gives `app` its set of open streams, ended before the server closes its sockets, by the
 * deadline `closing` gives then (see closeByDeadline).
 */
export function trackOpenStreams(app: FastifyInstance, closing: () => Deadline): void {
  const streams = new OpenStreams();
  app.decorate("openStreams", streams);
  app.addHook("preClose", async () => streams.endAll(closing()));
}
