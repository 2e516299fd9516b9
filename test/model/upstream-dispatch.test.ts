import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { dispatchRequest } from "../../src/model/upstream-dispatch.js";

const servers: Server[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A real HTTP server answering with `handle`; resolves with its URL and a fresh pool. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(handle);
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const dispatcher = new Agent();
  agents.push(dispatcher);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/x?q=1`, dispatcher };
}

const send = (
  target: { url: string; dispatcher: Agent },
  { signal, body }: { signal?: AbortSignal; body?: string } = {},
) =>
  dispatchRequest({
    ...target,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body ?? "{}",
    signal,
  });

describe("a request over undici's dispatcher", () => {
  it("sends the method, path, headers and body, and streams the answer's body in order to its end", async () => {
    let seen: { method?: string; url?: string; type?: string; body: string } = { body: "" };
    const target = await serve((req, res) => {
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        seen = { method: req.method, url: req.url, type: req.headers["content-type"], body };
        res.writeHead(201, { "x-request-id": "r1" });
        res.write("one,");
        setTimeout(() => res.end("two"), 20);
      });
    });
    const answer = await send(target, { body: '{"a":1}' });
    expect(answer.statusCode).toBe(201);
    expect(answer.headers["x-request-id"]).toBe("r1");
    expect(await answer.body.text()).toBe("one,two");
    expect(seen).toEqual({ method: "POST", url: "/v1/x?q=1", type: "application/json", body: '{"a":1}' });
  });

  it("reads a whole JSON answer with json()", async () => {
    const target = await serve((_req, res) => res.end('{"error":{"message":"no"}}'));
    expect(await (await send(target)).body.json()).toEqual({ error: { message: "no" } });
  });

  it("rejects with the signal's reason when it aborts before the answer's head, and ends the request", async () => {
    let closed = false;
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const target = await serve((req) => {
      req.socket.on("close", () => (closed = true));
      arrived();
    });
    const controller = new AbortController();
    const pending = send(target, { signal: controller.signal });
    // Aborted once the upstream has the request (not after a fixed 50 ms: a loaded machine could
    // abort before the request arrived, and the upstream then had no request to see closed).
    await requestArrived;
    const reason = new Error("stopped by the run");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await expect.poll(() => closed).toBe(true);
  });

  it("ends the body with the signal's reason when it aborts mid-body, and the upstream sees its connection closed", async () => {
    let closed = false;
    const target = await serve((_req, res) => {
      res.writeHead(200);
      res.write("first");
      res.on("close", () => (closed = true));
    });
    const controller = new AbortController();
    const answer = await send(target, { signal: controller.signal });
    const chunks: string[] = [];
    const reading = (async () => {
      for await (const chunk of answer.body) {
        chunks.push(String(chunk));
        controller.abort(new Error("cancelled"));
      }
    })();
    await expect(reading).rejects.toThrow("cancelled");
    expect(chunks).toEqual(["first"]);
    await expect.poll(() => closed).toBe(true);
  });

  it("a body destroyed before its end aborts the request: its connection is closed, not left with unread bytes", async () => {
    let closed = false;
    const target = await serve((_req, res) => {
      res.writeHead(500);
      res.write("x".repeat(1000));
      res.on("close", () => (closed = true));
    });
    const answer = await send(target);
    answer.body.destroy();
    await expect.poll(() => closed).toBe(true);
  });

  it("a reader that stops reading stops the upstream: what the body holds stays bounded", async () => {
    let written = 0;
    let backedUp = false;
    const target = await serve((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 97);
      const pump = () => {
        while (written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) {
            backedUp = true;
            res.once("drain", pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const answer = await send(target);
    await expect.poll(() => backedUp, { timeout: 5000 }).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Nothing read: the body holds about its high-water mark, the rest waits upstream.
    expect(answer.body.readableLength).toBeLessThan(1024 * 1024);
    expect(written).toBeLessThan(32 * 1024 * 1024);
    answer.body.destroy();
  });
});
