/**
 * A steer sent again with its idempotency key after the server was lost (kill-anywhere seed
 * 3047): the earlier copy's input was stored on the run it steered, the restart (here with
 * ON_RESTART=abort) ended that run, and the retry arrives before the restart's recovery queues
 * the left input as a run of its own. The input makes one run, whichever takes it.
 */
import { afterEach, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { freePort } from "../helpers/child-server.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0).reverse()) await server.close();
});

it("a steer retried while the restart's recovery has not yet queued its left input makes one run of it", async () => {
  const upstream = await startFakeUpstream();
  upstream.fallback = () => ({ text: "done" });
  const a = await startTestServer({ upstream });
  const { sessionId, runId: firstId } = await runAwaitingApproval(a, { input: "first" });
  const steer = { body: { input: "also this", ifBusy: "steer" }, headers: { "idempotency-key": "steer-1" } };
  // Stored on the run, which waits for a decision: the request waits for the run to take it.
  const earlier = a.request("POST", `/sessions/${sessionId}/runs`, steer).catch(() => null);
  await until(
    () => a.ctx.store.inputs.pending(firstId),
    (pending) => pending.length === 1,
    "the steered input",
  );
  // Stopped as a lost process leaves it: the run live, its steered input still stored.
  await a.close({ keepDir: true, resume: true });
  await earlier;

  const port = await freePort();
  let retry: Promise<{ status: number; body: { id: string } }> | null = null;
  // The restart's recovery ends the run (ON_RESTART=abort); as it looks for input left on ended
  // runs, the client sends its steer again, answered before the recovery goes on.
  const retryFirst = (store: Store): Store =>
    aroundStore(store, "inputs", (name, _args, call) => {
      if (name !== "orphaned" || retry) return call();
      retry = fetch(`http://127.0.0.1:${port}/sessions/${sessionId}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json", ...steer.headers },
        body: JSON.stringify(steer.body),
      }).then(async (res) => ({ status: res.status, body: await res.json() }));
      return retry.then(call);
    });
  const b = await startTestServer({ dir: a.dir, upstream, port, env: { ON_RESTART: "abort" }, wrapStore: retryFirst });
  servers.push(b);
  const answered = await (retry as unknown as Promise<{ status: number; body: { id: string } }>);
  expect(answered.status).toBe(201);

  const runs = await until(
    async () =>
      (await b.request("GET", `/sessions/${sessionId}/runs`)).body.items as {
        id: string;
        input: string;
        status: string;
      }[],
    (items) => items.every((r) => r.status === "finished"),
    "every run to finish",
  );
  expect(runs.filter((r) => r.input === "also this").map((r) => r.id)).toEqual([answered.body.id]);
  const messages = (await b.request("GET", `/sessions/${sessionId}/messages`)).body.items as { content: string }[];
  expect(messages.filter((m) => m.content === "also this")).toHaveLength(1);
  await upstream.close();
});
