/**
 * A steer sent again with its idempotency key after the server was lost: the earlier copy's
 * input was stored on the run it steered, and the restart (here with ON_RESTART=abort) ends that
 * run and queues the left input as a run of its own. The input makes one run, whichever takes
 * it, and the retry is answered with that run.
 */
import { afterEach, expect, it } from "vitest";
import { runOfLeftInput } from "../../src/runs/queue.js";
import type { Store } from "../../src/store/store.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { freePort } from "../helpers/child-server.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
const upstreams: FakeUpstream[] = [];
afterEach(async () => {
  for (const server of servers.splice(0).reverse()) await server.close();
  for (const upstream of upstreams.splice(0)) await upstream.close();
});

const steer = { body: { input: "also this", ifBusy: "steer" }, headers: { "idempotency-key": "steer-1" } };
type Answer = { status: number; body: { id: string } };

/**
 * A server stopped as a lost process leaves it: its run live (awaiting approval) with a keyed
 * steer's input stored on it; and the port its restart will listen on.
 */
async function lostWithSteeredInput() {
  const upstream = await startFakeUpstream();
  upstreams.push(upstream);
  upstream.fallback = () => ({ text: "done" });
  const a = await startTestServer({ upstream });
  const { sessionId, runId } = await runAwaitingApproval(a, { input: "first" });
  // Stored on the run, which waits for a decision: the request waits for the run to take it.
  const earlier = a.request("POST", `/sessions/${sessionId}/runs`, steer).catch(() => null);
  await until(
    () => a.ctx.store.inputs.pending(runId),
    (pending) => pending.length === 1,
    "the steered input",
  );
  await a.close({ keepDir: true, resume: true });
  await earlier;
  const port = await freePort();
  const retry = (): Promise<Answer> =>
    fetch(`http://127.0.0.1:${port}/sessions/${sessionId}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", ...steer.headers },
      body: JSON.stringify(steer.body),
    }).then(async (res) => ({ status: res.status, body: await res.json() }));
  return { upstream, dir: a.dir, sessionId, port, retry };
}

/** Once every run has finished: the steered input made one run, the one the retry was answered with. */
async function expectOneRunOfInput(server: TestServer, sessionId: string, answered: Answer | null) {
  const runs = await until(
    async () =>
      (await server.request("GET", `/sessions/${sessionId}/runs`)).body.items as {
        id: string;
        input: string;
        status: string;
      }[],
    (items) => items.every((r) => r.status === "finished"),
    "every run to finish",
  );
  expect(runs.filter((r) => r.input === "also this").map((r) => r.id)).toEqual([answered?.body.id]);
  const messages = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items as { content: string }[];
  expect(messages.filter((m) => m.content === "also this")).toHaveLength(1);
}

/** Kill-anywhere seed 3047: the retry arrives before the recovery queues the left input. */
it("a steer retried while the restart's recovery has not yet queued its left input makes one run of it", async () => {
  const { upstream, dir, sessionId, port, retry } = await lostWithSteeredInput();
  let retried: Promise<Answer> | null = null;
  // The restart's recovery ends the run (ON_RESTART=abort); as it looks for input left on ended
  // runs, the client sends its steer again, answered before the recovery goes on.
  const retryFirst = (store: Store): Store =>
    aroundStore(store, "inputs", (name, _args, call) => {
      if (name !== "orphaned" || retried) return call();
      retried = retry();
      return retried.then(call);
    });
  const b = await startTestServer({ dir, upstream, port, env: { ON_RESTART: "abort" }, wrapStore: retryFirst });
  servers.push(b);
  const answered = await (retried as unknown as Promise<Answer>);
  expect(answered.status).toBe(201);
  await expectOneRunOfInput(b, sessionId, answered);
});

/**
 * Kill-anywhere postgres seed 992844593: the retry arrives before the recovery ends the run. It
 * finds the run active and stores its input there again (stored already), while the recovery
 * ends the run and queues the left input as a run of its own. The retry then found the input
 * no longer pending on the run and took the session for idle: a second run of the same input.
 */
it("a steer retried while the restart's recovery ends its run and queues the left input is answered with that run", async () => {
  const { upstream, dir, sessionId, port, retry } = await lostWithSteeredInput();
  let retried: Promise<Answer> | null = null;
  let reachedAdd: () => void = () => {};
  const atAdd = new Promise<void>((resolve) => {
    reachedAdd = resolve;
  });
  const interleave = (store: Store): Store =>
    aroundStore(
      // As the recovery begins to end the run, the client sends its steer again; the recovery
      // goes on once the retry, having found the run active, is about to store its input.
      aroundStore(store, "toolCalls", (name, _args, call) => {
        if (name !== "inState" || retried) return call();
        retried = retry();
        return atAdd.then(call);
      }),
      "inputs",
      // The retry's store of its input waits for the recovery to queue the left input as a run.
      (name, args, call) => {
        if (name !== "add") return call();
        reachedAdd();
        const inputId = (args[0] as { id: string }).id;
        return until(
          () => runOfLeftInput(store, { sessionId, inputId, input: "" }),
          (run) => run !== null,
          "the left input queued as a run",
        ).then(call);
      },
    );
  const b = await startTestServer({ dir, upstream, port, env: { ON_RESTART: "abort" }, wrapStore: interleave });
  servers.push(b);
  const answered = await until(
    async () => (retried ? await retried : null),
    (response) => response !== null,
    "the retried steer's answer",
  );
  expect(answered?.status).toBeLessThan(300);
  await expectOneRunOfInput(b, sessionId, answered);
});

/**
 * The earlier copy's input was left on a run that ended without it while the session's next
 * run started (a DELETE here, after the restart resumed the run; over a shared database,
 * another instance's end), before anything queued the left input (the end's own queueing of
 * it fails here, as when its process is lost right after the end). The retry finds that next run
 * active, not holding the input: it took the session for busy with nothing of its own, and
 * queued a run that did not take the input, which a later pass then queued again (two runs).
 */
it("a steer retried once its input is left on an ended run, with the session's next run active, takes that input", async () => {
  const { upstream, dir, sessionId, port, retry } = await lostWithSteeredInput();
  const endLeavesInput = (store: Store): Store =>
    aroundStore(store, "inputs", (name, _args, call) =>
      name === "leftOn" ? Promise.reject(new Error("lost before it queued the left input")) : call(),
    );
  const b = await startTestServer({ dir, upstream, port, wrapStore: endLeavesInput });
  servers.push(b);
  const [first] = (await b.request("GET", `/sessions/${sessionId}/runs`)).body.items as { id: string }[];
  // The next run waits for an approval, so it stays active.
  upstream.enqueue({ toolCalls: [{ id: "call_n", name: "write_file", arguments: '{"path":"n.txt","content":"n"}' }] });
  const next = await b.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "next", ifBusy: "enqueue" } });
  await b.request("DELETE", `/runs/${first?.id}`);
  await until(
    async () => (await b.request("GET", `/runs/${next.body.id}`)).body.status,
    (status) => status === "awaiting_approval",
    "the next run's approval request",
  );
  expect((await b.ctx.store.inputs.orphaned()).map((i) => i.content)).toEqual(["also this"]);

  const answered = await retry();
  expect(answered.status).toBeLessThan(300);
  // The retry's run took the left input: nothing is left to make another run of it.
  expect(await b.ctx.store.inputs.orphaned()).toEqual([]);
  await b.request("DELETE", `/runs/${next.body.id}`);
  await expectOneRunOfInput(b, sessionId, answered);
});
