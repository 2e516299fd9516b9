/**
 * A client that goes away while its event stream's handler still awaits (`GET /runs/{id}/events`
 * looking the run up, a start with `Accept: text/event-stream` storing its run). The stream's
 * signal is then aborted before it opens: such a stream follows nothing and its handler settles
 * at once, instead of following the live run, for nobody, until it finishes (a run awaiting
 * approval: up to APPROVAL_TIMEOUT_MS), out of reach of MAX_STREAMS_PER_KEY (its response has
 * closed, so it holds no slot).
 */
import net from "node:net";
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { openSse } from "../helpers/sse-client.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server?.close();
});

/** A server whose next `runs.<method>` call (once armed) waits for `released`, `reached` open meanwhile. */
async function serverHolding(method: string) {
  const held = { armed: false, reached: gate(), released: gate(), looked: undefined as Promise<unknown> | undefined };
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "runs", (name, _args, call) => {
        if (name !== method || !held.armed) return call();
        held.armed = false;
        held.reached.open();
        held.looked = held.released.wait.then(call);
        return held.looked;
      }),
  });
  // A run that waits for an approval: live, publishing nothing for a while.
  server.upstream.enqueue({ toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"echo hi"}' }] });
  server.upstream.fallback = () => ({ text: "done" });
  return held;
}

/** Sends `request` on a connection of its own, then drops it once the handler awaits the held call. */
async function leaveWhileHeld(held: Awaited<ReturnType<typeof serverHolding>>, request: string): Promise<void> {
  held.armed = true;
  const { port } = server.app.server.address() as net.AddressInfo;
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.write(request);
  await held.reached.wait;
  socket.destroy();
  await until(
    () => new Promise<number>((resolve) => server.app.server.getConnections((_e, n) => resolve(n))),
    (n) => n === 0,
    "the server to see the client gone",
  );
  held.released.open();
  await held.looked;
}

it("a stream of a live run whose client left before it opened stops following the run at once", async () => {
  const held = await serverHolding("access");
  const session = await server.request("POST", "/sessions", { body: {} });
  const start = await openSse(`${server.url}/sessions/${session.body.id}/runs`, {
    method: "POST",
    body: { input: "go" },
  });
  const asked = await start.waitFor((e) => e.event === "approval.requested");
  const runId: string = asked.json.runId;
  start.close();
  await until(
    () => server.ctx.hub.watcherCount(runId),
    (n) => n === 0,
    "the first stream's watcher to go",
  );

  await leaveWhileHeld(
    held,
    `GET /runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`,
  );
  // The handler goes on to open the stream for a client that is gone: nobody is left watching.
  await expect.poll(() => server.ctx.hub.watcherCount(runId), { timeout: 5_000 }).toBe(0);
});

it("a start streamed to a client that left before its run was stored follows nothing of the run", async () => {
  const held = await serverHolding("create");
  const session = await server.request("POST", "/sessions", { body: {} });
  const body = JSON.stringify({ input: "go" });
  await leaveWhileHeld(
    held,
    `POST /sessions/${session.body.id}/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // The run goes on (a client leaving never cancels it) to wait for its approval.
  const runs = await until(
    async () => (await server.request("GET", `/sessions/${session.body.id}/runs`)).body.items ?? [],
    (items: { id: string; status: string }[]) => items.some((run) => run.status === "awaiting_approval"),
    "the started run to wait for its approval",
  );
  const runId = runs.find((run) => run.status === "awaiting_approval")?.id ?? "";
  await expect.poll(() => server.ctx.hub.watcherCount(runId), { timeout: 5_000 }).toBe(0);
});
