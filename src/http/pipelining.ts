import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { ObjectSlot } from "../object-slot.js";

/** The latest response of each connection: the one the next request pipelined on it waits for. */
const latest = new ObjectSlot<Socket, ServerResponse>("latest response");

/**
 * Requests pipelined on one connection (sent before the answer to the one before them was
 * taken) are handled one at a time: each waits until the answer before it has been handed to
 * the system in full (`finish`) or its connection closed. Node would otherwise handle every
 * request of a read at once and keep each answer in memory until the client reads its turn:
 * one connection sending 300 requests for a 1 MiB answer and reading none held 300 MiB. So
 * a connection holds at most one answer in the server's memory, which the write deadline
 * (cutStalledAnswers) then bounds in time. A request that is not pipelined does not wait;
 * one pipelined behind an event stream or a `?wait=true` wait is handled once that has ended
 * (its answer could not be sent sooner anyway); one whose connection closes while it waits is
 * never handled.
 * Register it before every other onRequest hook.
 */
export function oneAnswerAtATime(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook("onRequest", (request, reply, done) => {
    const socket = request.raw.socket;
    const before = latest.get(socket);
    latest.set(socket, reply.raw);
    if (before === undefined || before.writableFinished) return done();
    const go = () => {
      before.off("finish", go);
      before.off("close", go);
      // The connection is gone (the client left, or was cut for not reading): nobody is left to
      // answer, so the request is dropped unhandled (Node has aborted it).
      if (!socket.destroyed) done();
    };
    if (before.destroyed || socket.destroyed) return go();
    before.on("finish", go);
    before.on("close", go);
  });
}
