import type { FastifyBaseLogger, FastifyReply } from "fastify";
import type { AppContext } from "../app-context.js";
import type { RunEvent } from "../domain/run-events.js";
import { AppError } from "../errors.js";
import { CLIENT_GONE } from "../http/client-gone.js";
import { cutOnFailure, openStream } from "../http/sse.js";
import { writeFrames } from "../http/write-frames.js";
import type { AdmissionWatch } from "../runs/admission-watch.js";
import { runEventStream } from "../runs/event-stream.js";
import type { ReplyCall } from "../store/store.js";
import { type UiChunk, UiMessageProjection } from "./ui-chunks.js";

/** The headers of the UI message stream protocol, besides `text/event-stream`. */
const PROTOCOL_HEADERS = { "x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no" };

export interface ChatStreamOptions {
  runId: string;
  owner: string | null;
  /** Chunks of events up to this seq were sent by an earlier stream: they are not sent again. */
  after: number;
  /**
   * With `after` the seq of an approval request: the calls of its reply without a result there
   * (see Continuation). The events up to it are then not read; without it, they are read only to
   * be dropped.
   */
  awaiting?: readonly ReplyCall[];
  /** The client closing the stream before its end is `useChat`'s stop: the run is cancelled. */
  stopCancels: boolean;
  /** Whether the run had finished when the caller read it (see RunEventsQuery); else read. */
  finished?: boolean;
  /** A watch that saw the run admitted: the stream begins with what it holds (see runEventStream). */
  admission?: AdmissionWatch;
}

/**
 * Streams a run as one assistant UI message (`data: <chunk>` frames, then `data: [DONE]`),
 * until the run finishes or stops to wait for an approval nobody has given yet (the SDK then
 * shows the approval request and posts the answer in its next request).
 */
export async function streamChat(
  ctx: Pick<AppContext, "store" | "hub" | "runs">,
  reply: FastifyReply,
  options: ChatStreamOptions,
): Promise<void> {
  reply.headers(PROTOCOL_HEADERS);
  // Cut at a shutdown: the SDK takes a clean end for the whole answer, a cut one it resumes.
  const closed = openStream(reply, { cut: true });
  let complete = false;
  const frames = chatFrames(ctx, options, closed, () => {
    complete = true;
  });
  // A client gone before the stream opened has nothing sent to it; its run is cancelled below.
  // A HEAD was answered by the stream's head alone (see openStream): nothing follows it.
  // A client going away ends the writing at once, also one that stopped reading (see writeFrames).
  // A stream that cannot go on (its events cannot be read) is cut and this throws (see
  // cutOnFailure): the cut is the server's, not useChat's stop, and the run goes on.
  if (!closed.aborted) await cutOnFailure(reply, () => writeFrames({ frames, raw: reply.raw, closed }));
  if (!complete && options.stopCancels && closed.reason === CLIENT_GONE) stopRun(ctx, reply.log, options);
}

/**
 * useChat's stop: cancels the run, not awaited (its client is gone). A run finished or gone
 * (deleted with its session) is nothing to stop; a cancel that fails otherwise is logged.
 */
function stopRun(
  ctx: Pick<AppContext, "runs">,
  log: FastifyBaseLogger,
  { runId, owner }: Pick<ChatStreamOptions, "runId" | "owner">,
): void {
  ctx.runs.cancel(runId, owner).catch((err: unknown) => {
    if (err instanceof AppError && err.code === "NOT_FOUND") log.debug({ runId }, "the stopped chat's run is gone");
    else log.warn({ err, runId }, "could not cancel the run of a stopped chat");
  });
}

async function* chatFrames(
  ctx: Pick<AppContext, "store" | "hub">,
  { runId, after, awaiting, finished, admission }: ChatStreamOptions,
  closed: AbortSignal,
  ended: () => void,
): AsyncGenerator<{ data: string }> {
  const projection = new UiMessageProjection();
  const send = (chunks: UiChunk[]) => chunks.map((chunk) => ({ data: JSON.stringify(chunk) }));
  const taken = after > 0 && awaiting !== undefined && awaiting.length > 0;
  if (taken) {
    // Taken up at the approval request: what a stream of the events before it would have sent first.
    projection.atApprovalRequest(awaiting);
    yield* send([{ type: "start", messageId: runId }]);
  }
  // The projection shows no user message: their stored events (a run's input, its steered inputs, each up to 1 MB) are not read.
  const events = runEventStream({
    store: ctx.store,
    hub: ctx.hub,
    runId,
    after: taken ? after : 0,
    closed,
    withoutUserMessages: true,
    finished,
    admission,
  });
  for await (const frame of events) {
    const event = JSON.parse(frame.data) as RunEvent;
    const chunks = projection.next(event);
    // `start` is sent by every stream: it names the message the chunks belong to.
    if (event.seq > after) yield* send(chunks);
    else if (event.type === "run.started") yield* send(chunks.filter((chunk) => chunk.type === "start"));
    if (event.type === "run.finished") break;
    if (
      event.type === "approval.requested" &&
      event.seq > after &&
      (await awaitsDecision(ctx, runId, event.toolCallId))
    ) {
      yield* send([{ type: "finish", finishReason: "tool-calls" }]);
      break;
    }
  }
  if (closed.aborted) return;
  ended();
  yield { data: "[DONE]" };
}

/** Whether the run still waits for a decision on `toolCallId` (not decided, not finished); the call's input is not read. */
async function awaitsDecision(ctx: Pick<AppContext, "store">, runId: string, toolCallId: string): Promise<boolean> {
  const call = await ctx.store.toolCalls.status(runId, toolCallId);
  return !!call && !call.decision && (await ctx.store.runs.access(runId))?.status !== "finished";
}
