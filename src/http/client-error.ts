import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import { newId } from "../ids.js";

/** How a request Node's HTTP parser refused (before any route saw it) is answered. */
function classify(err: NodeJS.ErrnoException): { status: number; code: string; message: string } {
  switch (err.code) {
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return { status: 400, code: "INVALID_CONTENT_LENGTH", message: "the Content-Length header is not valid" };
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, code: "HEADERS_TOO_LARGE", message: "the request's headers are too large" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, code: "REQUEST_TIMEOUT", message: "the request was not received in time" };
    default:
      return { status: 400, code: "BAD_REQUEST", message: "the request is not valid HTTP" };
  }
}

/**
 * Fastify's `clientErrorHandler`: a request the HTTP parser refused still gets the JSON
 * error envelope and an `X-Request-Id` (a fresh id, as a routed request's, logged with the
 * refusal), then the connection closes, as the parser cannot go on with it.
 */
export function clientErrorHandler(logger: Logger): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    // Nothing can be answered on a socket that is gone, or in the middle of another response
    // (pipelining): raw bytes would corrupt it.
    const inResponse = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (err.code === "ECONNRESET" || socket.destroyed || !socket.writable || inResponse) {
      socket.destroy();
      return;
    }
    const { status, code, message } = classify(err);
    const reqId = newId("req");
    logger.info({ reqId, statusCode: status, code }, "request refused by the HTTP parser");
    const body = JSON.stringify({ error: { code, message } });
    // Closed for good once the answer is out, whatever the client does with its side.
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${reqId}\r\nconnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  };
}
