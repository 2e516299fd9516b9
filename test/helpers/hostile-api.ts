import http from "node:http";
import type { AddressInfo } from "node:net";

/** What a hostile "agent server" answers: `handle` writes the response (or never does). */
export type HostileHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface HostileApi {
  url: string;
  /** Each request's method and path, in order. */
  requests: string[];
  close(): Promise<void>;
}

/**
 * A server on 127.0.0.1 that plays the agent server's API as an attacker would: the test's
 * `handle` answers every request. `close` ends the connections it holds open too.
 */
export async function startHostileApi(handle: HostileHandler): Promise<HostileApi> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A JSON answer. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** The fields of a run the client reads, with `fields` over them. */
export function runJson(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: "run_1", sessionId: "ses_1", status: "running", stopReason: null, error: null, ...fields };
}

/** One SSE frame with its id, event name and JSON (or raw) data. */
export function sseFrame(id: number, data: unknown): string {
  const text = typeof data === "string" ? data : JSON.stringify(data);
  const type = typeof data === "object" && data !== null && "type" in data ? String(data.type) : "message";
  return `id: ${id}\nevent: ${type}\ndata: ${text}\n\n`;
}
