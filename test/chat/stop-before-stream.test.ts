/**
 * useChat's stop() while its message is still "submitted" (the POST sent, no response yet):
 * the SDK aborts the fetch. The chat route then still started the run and opened the stream on
 * a response already closed: the close was emitted before openStream listened for it, so the
 * stream never learned its client was gone, the run was never cancelled, and the stream stayed
 * counted in the server's open streams for ever. Now the stream's signal is aborted at once
 * (the client gone), nothing is tracked, and the run is cancelled as for a stop mid-stream.
 */

import type { ServerResponse } from "node:http";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** Whether `condition` held within `ms` (checked every 20 ms). */
async function within(ms: number, condition: () => boolean | Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

let server: TestServer;
/** Called with each runs.access(runId) the server makes. */
let onAccess: (runId: string) => Promise<void> | void = () => {};

beforeAll(async () => {
  server = await startTestServer({
    wrapStore: (store: Store) => {
      const access = store.runs.access.bind(store.runs);
      store.runs.access = (async (runId: string, ...rest: unknown[]) => {
        // The chat start's wait for the busy session's run: held until the test lets it read.
        if (new Error().stack?.includes("startChatRun")) await onAccess(runId);
        return (access as (...a: unknown[]) => unknown)(runId, ...rest);
      }) as typeof store.runs.access;
      return store;
    },
  });
});
afterAll(async () => {
  await server?.close();
});

it("a chat message whose client went away before the stream opened: its run is cancelled, no stream is left open", async () => {
  const { sessionId, runId: first } = await runAwaitingApproval(server);
  const hold = gate();
  try {
    server.upstream.enqueue({ text: ["second ", "answer"], gate: hold.wait });
    // The server's own response object of the chat request, to see it close.
    let chatResponse: ServerResponse | undefined;
    server.app.server.on("request", (req, res) => {
      if (req.method === "POST" && req.url === `/sessions/${sessionId}/chat`) chatResponse = res;
    });
    // The route waits for the busy session's run (STOPPING_GRACE_MS): it polls its status.
    const proceed = gate();
    const polled = new Promise<void>((resolve) => {
      onAccess = async (id) => {
        if (id !== first) return;
        resolve();
        await proceed.wait;
      };
    });
    const body = JSON.stringify({ messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hello" }] }] });
    const url = new URL(`${server.url}/sessions/${sessionId}/chat`);
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      agent: false,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
    });
    req.on("error", () => {});
    req.end(body);
    await polled;
    // stop(): the client aborts its request before any response.
    req.destroy();
    expect(await within(5000, () => chatResponse?.closed === true)).toBe(true);
    // The stopped-looking session's run is cancelled: the chat's message now starts its run.
    expect((await server.request("DELETE", `/runs/${first}`)).status).toBe(202);
    await server.ctx.manager.waitForFinish(first);
    onAccess = () => {};
    proceed.open();
    // The chat's run (if it was started at all: not starting it is a fix too).
    const others = async () =>
      ((await server.request("GET", `/sessions/${sessionId}/runs`)).body.items as { id: string }[])
        .map((r) => r.id)
        .filter((id) => id !== first);
    await within(3000, async () => (await others()).length > 0);
    const [second] = await others();
    // Give a fixed cancel every chance to land, then let the model answer.
    if (second) {
      await within(2000, async () => {
        const status = (await server.request("GET", `/runs/${second}`)).body.status;
        return status === "cancelling" || status === "finished";
      });
    }
    hold.open();
    const outcome = second ? (await server.ctx.manager.waitForFinish(second)).stopReason : "not started";
    expect({ chatRun: outcome, openStreams: server.app.openStreams.size }).toEqual({
      chatRun: outcome === "not started" ? "not started" : "aborted",
      openStreams: 0,
    });
  } finally {
    hold.open();
    onAccess = () => {};
  }
});
