/**
 * A client that goes away while `GET /runs/{id}/events` is still looking the run up (an await
 * before the stream opens: the access check, a PostgreSQL round trip). Its response's `close`
 * was emitted then and never comes again: the stream was tracked for good (app.openStreams,
 * agent_sse_connections stayed up, the reply was kept) and its signal never aborted. Now such
 * a stream is not tracked and its signal is aborted at once.
 */
import net from "node:net";
import { afterEach, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server?.close();
});

it("a stream whose client left before it opened is not counted as open", async () => {
  let armed = false;
  const reached = gate();
  const released = gate();
  let looked: Promise<unknown> | undefined;
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "runs", (name, _args, call) => {
        if (name !== "access" || !armed) return call();
        armed = false;
        reached.open();
        looked = released.wait.then(call);
        return looked;
      }),
  });
  const session = await server.request("POST", "/sessions", { body: {} });
  server.upstream.enqueue({ text: "done" });
  const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "hi" } });
  expect(run.status).toBe(200);

  armed = true;
  const { port } = server.app.server.address() as net.AddressInfo;
  const socket = net.connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.write(`GET /runs/${run.body.run.id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`);
  await reached.wait;
  // The client goes away while the handler is looking the run up.
  socket.destroy();
  await until(
    () => new Promise<number>((resolve) => server.app.server.getConnections((_e, n) => resolve(n))),
    (n) => n === 0,
    "the server to see the client gone",
  );
  released.open();
  // The handler goes on at once (with no other I/O) to open the stream.
  await looked;
  await new Promise((resolve) => setImmediate(resolve));
  const metrics = new Exposition(await (await fetch(`${server.url}/metrics`)).text());
  expect({ tracked: server.app.openStreams.size, gauge: metrics.value("agent_sse_connections") }).toEqual({
    tracked: 0,
    gauge: 0,
  });
});
