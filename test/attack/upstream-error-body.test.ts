import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** A model upstream answering every request with `handler` (the run's model requests go here). */
async function hostileUpstream(handler: http.RequestListener) {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Run = { id: string; status: string; stopReason: string | null; error: { code: string; message: string } | null };

describe("a model upstream's error answer (a malicious or broken provider)", () => {
  let server: TestServer | undefined;
  let upstream: Awaited<ReturnType<typeof hostileUpstream>> | undefined;
  afterEach(async () => {
    await server?.close();
    await upstream?.close();
    server = undefined;
    upstream = undefined;
  });

  const start = async (handler: http.RequestListener, env: Record<string, string> = {}) => {
    upstream = await hostileUpstream(handler);
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: upstream.baseURL,
        MODEL_REQUEST_TIMEOUT_MS: "1000",
        MODEL_IDLE_TIMEOUT_MS: "1000",
        ...env,
      },
    });
    const session = (await server.request("POST", "/sessions", { body: {} })).body as { id: string };
    return (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } })).body as Run;
  };
  /** The run once it finished, or as it is after `ms`. */
  const settled = async (runId: string, ms: number): Promise<Run> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const run = (await server?.request("GET", `/runs/${runId}`))?.body as Run;
      if (run.status === "finished" || Date.now() > deadline) return run;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it("whose body never ends fails the run MODEL_TIMEOUT within the request timeout", async () => {
    // Before, the SDK read an error's body to its end with no timeout: a 400 whose body sends a
    // byte every 50 ms kept the run `running` for good (10 s here, MODEL_REQUEST_TIMEOUT_MS 1 s).
    const run = await start((_req, res) => {
      res.writeHead(400, { "content-type": "application/json" });
      res.write('{"error":{"message":"');
      const timer = setInterval(() => res.write("x"), 50);
      res.on("close", () => clearInterval(timer));
    });
    const after = await settled(run.id, 10_000);
    expect(after.status).toBe("finished");
    expect(after.stopReason).toBe("error");
    expect(after.error?.code).toBe("MODEL_TIMEOUT");
  }, 30_000);

  it("cut mid-way keeps its status and message: an error answer, not a broken connection to retry", async () => {
    let requests = 0;
    const run = await start(
      (_req, res) => {
        requests++;
        res.writeHead(400, { "content-type": "application/json", "content-length": "1000" });
        res.write('{"error":{"message":"the key is not valid');
        setTimeout(() => res.socket?.destroy(), 20);
      },
      { MODEL_MAX_RETRIES: "2" },
    );
    const after = await settled(run.id, 10_000);
    expect(after.stopReason).toBe("error");
    expect(after.error?.code).toBe("MODEL_UPSTREAM");
    expect(after.error?.message).toContain("HTTP 400: ");
    expect(after.error?.message).toContain("the key is not valid");
    expect(requests).toBe(1);
  }, 30_000);

  it("of 256 MB is read only as far as its message needs: the server's memory does not grow by it", async () => {
    // Before, the whole body was buffered, decoded and parsed: this one grew the server by
    // 1.3 GB (resident, at its peak); now by ~7 MB, and 4 of its 256 MiB were sent.
    const piece = Buffer.alloc(1024 * 1024, "x");
    let sent = 0;
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 10);
    try {
      const run = await start((_req, res) => {
        res.writeHead(400, { "content-type": "application/json" });
        res.write('{"error":{"message":"too long: ');
        const pump = () => {
          while (sent < 256) {
            sent++;
            if (!res.write(piece)) return void res.once("drain", pump);
          }
          res.end('"}}');
        };
        res.on("close", () => res.removeAllListeners("drain"));
        pump();
      });
      const after = await settled(run.id, 20_000);
      expect(after.stopReason).toBe("error");
      expect(after.error?.code).toBe("MODEL_UPSTREAM");
      expect(after.error?.message).toContain("HTTP 400: ");
      expect(after.error?.message).toContain("too long: xxx");
    } finally {
      clearInterval(sampler);
    }
    expect(sent).toBeLessThan(256);
    expect((peak - before) / 2 ** 20).toBeLessThan(64);
  }, 60_000);
});
