/**
 * README (Security): every log line has each of AGENT_API_KEYS replaced by [redacted] in any
 * encoding. A client that puts its key in a URL by mistake gets it into the request's log line,
 * which pino writes as JSON: a key holding `"` or `\` appeared there as `\"` or `\\`, escapes
 * the redaction did not cover, and the key was logged whole.
 */
import net from "node:net";
import { Writable } from "node:stream";
import { afterEach, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Sends a raw request line (as curl does: its characters as given) and reads the answer's status line. */
function rawGet(url: string, target: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: close\r\n\r\n`);
    });
    let text = "";
    socket.on("data", (d) => {
      text += d.toString("latin1");
    });
    socket.on("end", () => resolve(text.split("\r\n")[0] ?? ""));
    socket.on("error", reject);
  });
}

const QUOTE_KEY = 'tenant"key-0123456789abcdef';
const BACKSLASH_KEY = "tenant\\key-0123456789abcdef";

it("a key holding a quote or a backslash, sent in a URL, is redacted from the request's log line (pino writes them \\\" and \\\\)", async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const keys = [QUOTE_KEY, BACKSLASH_KEY];
  // The logger as src/server.ts makes it: the API keys are its secrets.
  const logger = createLogger({ level: "info", destination: sink, secrets: keys });
  server = await startTestServer({ env: { AGENT_API_KEYS: keys.join(",") }, logger });
  // %-encoded, as fetch sends it.
  expect((await fetch(`${server.url}/sessions?k=${encodeURIComponent(QUOTE_KEY)}`)).status).toBe(401);
  // curl sends `"` and `\` in a query as they are (Node's parser takes them).
  expect(await rawGet(server.url, `/sessions?k=${QUOTE_KEY}`)).toMatch(/^HTTP\/1\.1 401/);
  expect(await rawGet(server.url, `/sessions?k=${BACKSLASH_KEY}`)).toMatch(/^HTTP\/1\.1 401/);
  const urls = lines
    .map((line) => JSON.parse(line) as { msg?: string; url?: string })
    .filter((entry) => entry.msg === "request")
    .map((entry) => decodeURIComponent(entry.url ?? ""));
  expect(urls).toHaveLength(3);
  const leaked = keys.filter((key) => urls.some((url) => url.includes(key)));
  expect({ leaked, urls }).toEqual({ leaked: [], urls: expect.any(Array) });
});
