import { request } from "node:http";
import type { Socket } from "node:net";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** What the server's side of a connection handed the kernel: one entry per write call on its handle. */
type Handed = string[];

let server: TestServer;
const handedBy = new Map<Socket, Handed>();

beforeAll(async () => {
  server = await startTestServer();
  // Every write of every accepted connection, as its TCP handle is asked to send it.
  server.app.server.on("connection", (socket: Socket) => {
    const handed: Handed = [];
    handedBy.set(socket, handed);
    const handle = (socket as unknown as { _handle: Record<string, (...args: unknown[]) => unknown> })._handle;
    const text = (data: unknown) => (Buffer.isBuffer(data) ? data.toString("latin1") : String(data));
    for (const method of ["writeBuffer", "writeUtf8String", "writeLatin1String", "writeAsciiString"]) {
      const original = handle[method]?.bind(handle);
      if (!original) continue;
      handle[method] = (req: unknown, data: unknown) => {
        handed.push(text(data));
        return original(req, data);
      };
    }
    const writev = handle.writev?.bind(handle);
    if (writev) {
      handle.writev = (req: unknown, chunks: unknown, allBuffers: unknown) => {
        // (a list of chunks, or of chunk and encoding pairs)
        const list = chunks as unknown[];
        const parts = allBuffers ? list : list.filter((_, i) => i % 2 === 0);
        handed.push(parts.map(text).join(""));
        return writev(req, chunks, allBuffers);
      };
    }
  });
});
afterAll(() => server?.close());

/** POSTs a run asking for its events, on a connection of its own; resolves with the body once it ends. */
function streamRun(sessionId: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const url = new URL(`/sessions/${sessionId}/runs`, server.url);
    const body = JSON.stringify({ input: "list" });
    const req = request(
      url,
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", accept: "text/event-stream", "content-length": body.length },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve(text));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

it("a streamed run's response writes nothing empty, and its last frames leave with the response's end", async () => {
  server.upstream.enqueue({ toolCalls: [{ id: "call_l", name: "list_files", arguments: "{}" }] });
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const before = new Set(handedBy.keys());
  const body = await streamRun(session.id);
  expect(body).toContain("event: run.finished");
  const [handed] = [...handedBy].filter(([socket]) => !before.has(socket)).map(([, h]) => h);
  expect(handed?.[0]).toMatch(/^HTTP\/1.1 200 OK/);
  // No write of nothing (a flush of a head already sent), and no write of the end alone.
  expect(handed?.filter((data) => data.length === 0)).toEqual([]);
  const last = handed?.at(-1) ?? "";
  expect(last).toContain("event: run.finished");
  expect(last.endsWith("0\r\n\r\n")).toBe(true);
});

it("a streamed run's head leaves in one write with its first stored events, not alone", async () => {
  server.upstream.enqueue({ toolCalls: [{ id: "call_h", name: "list_files", arguments: "{}" }] });
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const before = new Set(handedBy.keys());
  await streamRun(session.id);
  const [handed] = [...handedBy].filter(([socket]) => !before.has(socket)).map(([, h]) => h);
  const first = handed?.[0] ?? "";
  expect(first).toMatch(/^HTTP\/1.1 200 OK/);
  expect(first).toContain("retry: 2000");
  expect(first).toContain("event: run.started");
});

it("a watcher with nothing stored left to send gets the head alone, soon", async () => {
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  // The model never answers: once its turn start is stored, the run stores nothing more.
  server.upstream.enqueue({ hang: "before-headers" });
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "wait" } })).body;
  let last = 0;
  // Waited for 10 s (vi.waitFor's own 1 s is a fixed wait a loaded machine can outlast).
  await vi.waitFor(
    async () => {
      const stored = await server.ctx.store.events.after(run.id, 0);
      expect(stored.map((e) => e.type)).toContain("turn.started");
      last = stored.at(-1)?.seq ?? 0;
    },
    { timeout: 10_000 },
  );
  const started = performance.now();
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      new URL(`/runs/${run.id}/events`, server.url),
      { agent: false, headers: { accept: "text/event-stream", "last-event-id": String(last) } },
      (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      },
    );
    req.on("error", reject);
    req.end();
  });
  expect(status).toBe(200);
  expect(performance.now() - started).toBeLessThan(1000);
  expect((await server.request("DELETE", `/runs/${run.id}`)).status).toBe(202);
});
