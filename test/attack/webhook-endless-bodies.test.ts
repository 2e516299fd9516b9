import { createServer, type Server } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const KEY = "key-a-0123456789abcdef";
const auth = { authorization: `Bearer ${KEY}` };
/** The most sends under way at once: 16, and 32 stuck ones beside them (see README, Webhooks). */
const MOST_SENDS = 16 + 32;

const connectionsOf = (server: Server) =>
  new Promise<number>((resolve) => server.getConnections((_err, count) => resolve(count)));

describe("a key's webhook receiver that answers 200 at once and never ends the body", () => {
  let server: TestServer;
  let receiver: Server;
  afterAll(async () => {
    await server?.close();
    receiver?.closeAllConnections();
    receiver?.close();
  });

  it("holds no more of the server's connections than the sends under way", async () => {
    // Before, a try ended with the answer's status line and its body was left to drain for up to
    // WEBHOOK_TIMEOUT_MS (10 s) outside every bound on sends: such a receiver was answered "fast",
    // so its key got 8 sends at once, and one key's runs (a run.started and a run.finished each)
    // held 1,370 of the server's connections open after 8 s (descriptors it needs for its runs,
    // its database and its clients).
    receiver = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        response.writeHead(200, { "content-type": "text/plain" });
        const trickle = setInterval(() => response.write("x"), 100);
        response.write("x");
        response.on("close", () => clearInterval(trickle));
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const { port } = receiver.address() as { port: number };
    server = await startTestServer({
      env: { AGENT_API_KEYS: KEY, WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_POLL_MS: "20" },
    });
    server.upstream.fallback = () => ({ text: "ok" });
    const webhook = { url: `http://127.0.0.1:${port}/hook`, events: ["run.started", "run.finished"] };
    const session = (await server.request("POST", "/sessions", { headers: auth, body: { webhook } })).body as {
      id: string;
    };
    let most = 0;
    let runs = 0;
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
        headers: auth,
        body: { input: "go" },
      });
      expect(waited.status).toBe(200);
      runs++;
      most = Math.max(most, await connectionsOf(receiver));
    }
    expect(runs).toBeGreaterThan(50);
    expect(most).toBeLessThanOrEqual(MOST_SENDS);
    // The server itself is as responsive as before.
    expect((await server.request("GET", "/healthz")).status).toBe(200);
  }, 60_000);
});
