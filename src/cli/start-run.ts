import { randomUUID } from "node:crypto";
import type { ApiClient } from "./api-client.js";
import { CliError } from "./cli-error.js";
import { printable } from "./printable.js";
import { withRetries } from "./retry.js";
import { curlCommand } from "./server-errors.js";
import type { Outputs } from "./terminal-out.js";
import { urlSegment } from "./url-segment.js";
import { RunBody } from "./wire.js";

/**
 * Starts a run in `sessionId` (`POST /sessions/{id}/runs` with `body`) under an
 * `Idempotency-Key` of its own, so that asking again gets the same run, never a second. It is
 * asked again only once its answer was lost after the request may have reached the server
 * (`maybeDone`: cut off, the connection broken after sending, a proxy's 502/503/504; the run
 * may exist by then), and from then on also while the server is away or restarting, for up
 * to GIVE_UP_MS; failing that, the error says a run may have started and where to look. Any
 * other failure (nothing sent, a refusal of the server's own) is thrown as it is.
 */
export async function startRun({
  client,
  out,
  sessionId,
  body,
}: {
  client: ApiClient;
  out: Outputs;
  sessionId: string;
  body: Record<string, unknown>;
}): Promise<RunBody> {
  const path = `/sessions/${urlSegment(sessionId)}/runs`;
  const headers = { "idempotency-key": randomUUID() };
  const attempt = () => client.json({ method: "POST", path, body, schema: RunBody, headers });
  try {
    return await attempt();
  } catch (error) {
    if (!(error instanceof CliError && error.maybeDone)) throw error;
    out.note(`[run] ${printable(error.message)}; asking again for the same run`);
  }
  try {
    return (await withRetries(attempt)) as RunBody;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    const runs = curlCommand(client.target, `${client.target.baseUrl}${path}`);
    throw new CliError(
      `${error.message}; a run may have started in session ${sessionId} (see ${runs})`,
      error.exitCode,
      {
        status: error.status,
      },
    );
  }
}
