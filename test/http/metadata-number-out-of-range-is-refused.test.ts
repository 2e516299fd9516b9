/**
 * A client sends a session `metadata` value that JSON allows but a double cannot hold
 * (`1e999`). JSON.parse reads it as Infinity, and JSON.stringify would store it as `null`: the
 * server would answer 201 and keep something other than what it was given, silently. It is
 * refused instead, 400 VALIDATION_FAILED naming the field's path, at any depth; the largest
 * double is kept as sent. Bodies are sent as raw bytes (a client's JSON.stringify cannot write 1e999).
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const KEY = "key-a-0123456789abcdef";
let server: TestServer;
afterEach(async () => {
  await server?.close();
});

/** One raw HTTP/1.1 request (the body as the bytes an attacker types), answered status and body. */
function rawPost(url: string, path: string, body: string): Promise<{ status: number; body: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1", () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      text += chunk;
    });
    socket.on("error", reject);
    socket.on("close", () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      resolve({ status, body: text.slice(text.indexOf("\r\n\r\n") + 4) });
    });
  });
}

describe.each(["sqlite", "postgres"] as const)("session metadata on %s", (backend) => {
  it("holding a number beyond a double is refused 400 at its path, at any depth; the largest double is kept", async () => {
    server = await startTestServer({ backend, env: { AGENT_API_KEYS: KEY } });
    const refusals: [string, string][] = [
      ['{"metadata":{"budget":1e999,"floor":-1e999}}', "metadata.budget"],
      ['{"metadata":{"floor":-1e999}}', "metadata.floor"],
      ['{"metadata":{"limits":{"steps":[1,2,1e400]}}}', "metadata.limits.steps.2"],
    ];
    for (const [body, path] of refusals) {
      const answer = await rawPost(server.url, "/sessions", body);
      expect(answer.status).toBe(400);
      const { error } = JSON.parse(answer.body);
      expect(error.code).toBe("VALIDATION_FAILED");
      expect(error.message).toContain(`body ${path}:`);
      expect(error.details).toEqual([expect.objectContaining({ in: "body", path })]);
    }
    const listed = await server.request("GET", "/sessions", { headers: { authorization: `Bearer ${KEY}` } });
    expect(listed.body.items).toEqual([]);

    const kept = await rawPost(server.url, "/sessions", '{"metadata":{"max":1.7976931348623157e308,"min":-5e-324}}');
    expect(kept.status).toBe(201);
    const id = JSON.parse(kept.body).id as string;
    const read = await server.request("GET", `/sessions/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(read.body.metadata).toEqual({ max: Number.MAX_VALUE, min: -5e-324 });
  });
});
