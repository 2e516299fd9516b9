import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A bare HTTP receiver on 127.0.0.1 answering each request with `answer` (its body drained
 * first): its `url` (path `/hook`) and `close`.
 */
export async function startPlainReceiver(answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const server = createServer((request, response) => {
    request.resume();
    answer(request, response);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
