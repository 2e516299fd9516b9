import type { ApiClient } from "./api-client.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import { Backoff, GIVE_UP_MS } from "./retry.js";
import { curlCommand, networkReason } from "./server-errors.js";
import { readSse, type SseFrame } from "./sse-reader.js";
import { urlSegment } from "./url-segment.js";

/** The server sends a heartbeat every 15 s: a stream silent for this long is dead. */
export const IDLE_MS = 45_000;
/**
 * A stream open at least this long that heard a heartbeat was a working one: its end starts a
 * new outage. A shorter one (it opens, says something and closes, as a broken proxy may do
 * for ever) is part of the outage it came in.
 */
export const HEALTHY_STREAM_MS = 1_000;

/**
 * A run's events from `GET /runs/{id}/events`, each once, in order, up to and including
 * `run.finished`. A stream that drops (the connection breaks, falls silent, or ends early,
 * as when the server restarts) is reopened with `Last-Event-ID`; `onReconnect` is told once
 * per outage (`refused`: the server answered, with a refusal that may pass, such as 429).
 * Only a new event, or a stream that heard a heartbeat and lasted `healthyMs`, ends an outage:
 * a stream that opens and closes again without either does not. When the attempts bring
 * neither for `giveUpMs`, it throws a `CliError`: unreachable, or the exit code of the
 * server's last refusal when it refused during the outage (429, 503). A refusal that
 * cannot pass by itself (401, 404) is thrown as it is. A stream counts as silent after
 * `idleMs` without data while it is read: the time the caller keeps a frame before asking for
 * the next (its output stopped by Ctrl-S) is not the server's silence.
 */
export async function* followRunEvents({
  client,
  runId,
  onReconnect,
  giveUpMs = GIVE_UP_MS,
  idleMs = IDLE_MS,
  healthyMs = HEALTHY_STREAM_MS,
}: {
  client: ApiClient;
  runId: string;
  onReconnect: (info: { after: number; reason: string; refused: boolean }) => void;
  giveUpMs?: number;
  idleMs?: number;
  healthyMs?: number;
}): AsyncGenerator<SseFrame> {
  const path = `/runs/${urlSegment(runId)}/events`;
  let after = 0;
  /** When the attempts since the last progress began failing; null: not failing. */
  let failingSince: number | null = null;
  /** The server's last refusal during this outage (429, 503); null: none. */
  let refusal: CliError | null = null;
  const backoff = new Backoff();
  const progressed = () => {
    failingSince = null;
    refusal = null;
    backoff.reset();
  };
  for (;;) {
    const connection = new AbortController();
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(new Error(`no data for ${idleMs / 1000} s`)), idleMs);
    };
    let reason = "the server ended the stream before run.finished";
    const openedAt = Date.now();
    let heartbeat = false;
    try {
      arm();
      const response = await client.send({
        request: `GET ${path}`,
        path,
        init: {
          headers: { accept: "text/event-stream", ...(after > 0 ? { "last-event-id": String(after) } : {}) },
          signal: connection.signal,
        },
      });
      if (!response.body) throw new CliError(`GET ${path} answered without a body`, EXIT.server);
      const frames = readSse(response.body, {
        onActivity: arm,
        onComment: () => {
          heartbeat = true;
        },
        maxChars: client.maxAnswerBytes,
      });
      for await (const frame of frames) {
        // Only an id of digits is a seq (the server's are): a frame without one is not a repeat.
        if (frame.id !== null && /^\d+$/.test(frame.id)) {
          const seq = Number(frame.id);
          if (seq <= after) continue;
          after = seq;
        }
        progressed();
        clearTimeout(idle);
        yield frame;
        if (frame.event === "run.finished") return;
        arm();
      }
    } catch (error) {
      if (error instanceof CliError && !error.retryable) throw error;
      if (error instanceof CliError && (error.status === 429 || error.status === 503)) refusal = error;
      reason = error instanceof CliError ? error.message : networkReason(connection.signal.reason ?? error);
    } finally {
      clearTimeout(idle);
      connection.abort();
    }
    if (heartbeat && Date.now() - openedAt >= healthyMs) progressed();
    const firstFailure = failingSince === null;
    failingSince ??= Date.now();
    if (Date.now() - failingSince > giveUpMs) {
      const seconds = Math.round(giveUpMs / 1000);
      const follow = `the run goes on in the server: follow it with ${curlCommand(client.target, `-N ${client.target.baseUrl}${path}`)}`;
      const refused = refusal as CliError | null;
      throw refused
        ? new CliError(
            `the server refused the events of run ${runId} and they did not come back for ${seconds} s (${
              reason === refused.message ? reason : `${refused.message}; last: ${reason}`
            }); ${follow}`,
            refused.exitCode,
          )
        : new CliError(
            `lost the events of run ${runId} and got nothing back for ${seconds} s (${reason}); ${follow}`,
            EXIT.unreachable,
          );
    }
    if (firstFailure) onReconnect({ after, reason, refused: refusal !== null });
    await backoff.wait();
  }
}
