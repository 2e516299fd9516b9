import type { ApiClient } from "./api-client.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import { networkReason } from "./server-errors.js";
import { readSse, type SseFrame } from "./sse-reader.js";

/** The server sends a heartbeat every 15 s: a stream silent for this long is dead. */
const IDLE_MS = 45_000;
/** How long the client keeps trying to get a lost stream back before it gives up. */
const GIVE_UP_MS = 30_000;
const FIRST_RETRY_MS = 200;
const MAX_RETRY_MS = 2_000;

/**
 * A run's events from `GET /runs/{id}/events`, each once, in order, up to and including
 * `run.finished`. A stream that drops (the connection breaks, falls silent, or ends early,
 * as when the server restarts) is reopened with `Last-Event-ID`, after `onReconnect` is told;
 * when no new event comes for `GIVE_UP_MS`, it throws an unreachable `CliError`. A refusal
 * that cannot pass by itself (401, 404) is thrown as it is.
 */
export async function* followRunEvents({
  client,
  runId,
  onReconnect,
  giveUpMs = GIVE_UP_MS,
}: {
  client: ApiClient;
  runId: string;
  onReconnect: (info: { after: number; reason: string }) => void;
  giveUpMs?: number;
}): AsyncGenerator<SseFrame> {
  const path = `/runs/${encodeURIComponent(runId)}/events`;
  let after = 0;
  let progressAt = Date.now();
  let delay = FIRST_RETRY_MS;
  for (;;) {
    const connection = new AbortController();
    let idle: NodeJS.Timeout | undefined;
    const alive = () => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(new Error(`no data for ${IDLE_MS / 1000} s`)), IDLE_MS);
    };
    let reason = "the server ended the stream before run.finished";
    try {
      alive();
      const response = await client.send({
        request: `GET ${path}`,
        path,
        init: {
          headers: { accept: "text/event-stream", ...(after > 0 ? { "last-event-id": String(after) } : {}) },
          signal: connection.signal,
        },
      });
      if (!response.body) throw new CliError(`GET ${path} answered without a body`, EXIT.server);
      for await (const frame of readSse(response.body, alive)) {
        const seq = Number(frame.id);
        if (Number.isSafeInteger(seq)) {
          if (seq <= after) continue;
          after = seq;
        }
        progressAt = Date.now();
        delay = FIRST_RETRY_MS;
        yield frame;
        if (frame.event === "run.finished") return;
      }
    } catch (error) {
      if (error instanceof CliError && !error.retryable) throw error;
      reason = error instanceof CliError ? error.message : networkReason(connection.signal.reason ?? error);
    } finally {
      clearTimeout(idle);
      connection.abort();
    }
    if (Date.now() - progressAt > giveUpMs) {
      throw new CliError(
        `lost the events of run ${runId} and got nothing back for ${Math.round(giveUpMs / 1000)} s (${reason}); the run goes on in the server: follow it with curl -N ${client.target.baseUrl}${path}`,
        EXIT.unreachable,
      );
    }
    onReconnect({ after, reason });
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, MAX_RETRY_MS);
  }
}
