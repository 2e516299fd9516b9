import type { ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { Deadline } from "../deadline.js";

/** How long (at most) a closing server waits for the answers under way before it closes their sockets. */
export const ANSWERS_WAIT_MS = 1000;

/**
 * Lets the answers under way when the server closes be sent (Fastify's `preClose`, after the
 * open streams were ended, before the sockets are closed: closing them cuts the answers not yet
 * sent), for at most ANSWERS_WAIT_MS and no later than the deadline `closing` gives then (see
 * closeByDeadline): a request the run manager's shutdown moved on (a steer whose run ended
 * there, a start whose run it stopped) gets its answer instead of a cut.
 */
export function letAnswersEnd(app: FastifyInstance, closing: () => Deadline): void {
  const underWay = new Set<ServerResponse>();
  app.addHook("onRequest", (_request, reply, done) => {
    const raw = reply.raw;
    underWay.add(raw);
    // Sent, or its connection gone.
    raw.once("close", () => underWay.delete(raw));
    done();
  });
  app.addHook("preClose", async () => {
    // Not the ended ones (the event streams, ended just before): they close as they flush.
    const open = [...underWay].filter((raw) => !raw.writableEnded);
    const closed = open.map((raw) => new Promise((resolve) => raw.once("close", resolve)));
    await closing().wait(Promise.all(closed), ANSWERS_WAIT_MS);
  });
}
