/**
 * A client posts its JSON body in the charset its Content-Type declares
 * (`application/json; charset=iso-8859-1`, the byte 0xE9 for "é"). The server's JSON parser
 * read every body as UTF-8 whatever the header said: 0xE9 became U+FFFD and the session was
 * created (201) with a system prompt other than the one sent, silently. JSON between systems is
 * UTF-8 (RFC 8259 8.1): a body declared in any other charset is refused, 415
 * UNSUPPORTED_MEDIA_TYPE in the error envelope naming the charset, and nothing is created;
 * `charset=utf-8` (any case, quoted or not) and no charset are read as before.
 */
import net from "node:net";
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY = "key-a-0123456789abcdef";
let server: TestServer;
afterEach(async () => {
  await server?.close();
});

function rawPost(port: number, contentType: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(
        `POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
          `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      );
      socket.write(body);
    });
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]),
        body: text.slice(text.indexOf("\r\n\r\n") + 4),
      });
    });
  });
}

it("a body declared in a charset other than UTF-8 is refused 415 naming it, and nothing is created", async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
  const port = Number(new URL(server.url).port);
  const refusals: [string, Buffer, string][] = [
    ["application/json; charset=iso-8859-1", Buffer.from('{"system":"café"}', "latin1"), "iso-8859-1"],
    ['application/json;charset="UTF-16LE"', Buffer.from('{"system":"café"}', "utf16le"), "UTF-16LE"],
    ["application/json; charset=latin1", Buffer.from('{"system":"cafe"}'), "latin1"],
  ];
  for (const [contentType, body, charset] of refusals) {
    const answer = await rawPost(port, contentType, body);
    expect(answer.status).toBe(415);
    const { error } = JSON.parse(answer.body);
    expect(error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect(error.message).toContain(JSON.stringify(charset));
    expect(error.details).toEqual({ charset });
  }
  const listed = await server.request("GET", "/sessions", { headers: { authorization: `Bearer ${KEY}` } });
  expect(listed.body.items).toEqual([]);
});

it("a UTF-8 body is read as sent, with charset=utf-8 (or its alias utf8, or us-ascii, a subset) in any case, quoted or not, or no charset", async () => {
  server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
  const port = Number(new URL(server.url).port);
  for (const contentType of [
    "application/json",
    "application/json; charset=utf-8",
    'application/json; charset="UTF-8"',
    "application/json;Charset=Utf-8",
    "application/json; charset=UTF8",
    "application/json; charset=us-ascii",
  ]) {
    const answer = await rawPost(port, contentType, Buffer.from('{"system":"café"}', "utf8"));
    expect([contentType, answer.status]).toEqual([contentType, 201]);
    expect(JSON.parse(answer.body).system).toBe("café");
  }
});
