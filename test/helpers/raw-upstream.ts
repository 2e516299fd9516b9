import http from "node:http";
import type { AddressInfo } from "node:net";

/** A model upstream of a test's own making: a plain node:http server on 127.0.0.1 answering with `handler`. */
export interface RawUpstream {
  /** The base URL the server's OPENAI_BASE_URL takes (`…/v1`). */
  baseURL: string;
  /** Closes its connections and stops listening. */
  close(): void;
}

export async function startRawUpstream(handler: http.RequestListener): Promise<RawUpstream> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
