/**
 * A planning run whose final answer is committed but whose end is not yet stored does not ask the
 * model again when it is resumed (it did: the case below; a shutdown between the two writes).
 *
 * A run without planning commits the model's final reply and its end (`complete`,
 * `run.finished`) in one write. A planning run cannot (src/runs/finish.ts, commitFinalReply:
 * "a planning run whose plan the end reads"): its reply is written alone, and the end follows
 * in a second write after finishRun has read the run's plan. A shutdown with ON_RESTART=resume
 * (or a crash) between those two writes leaves the run `running` with its final answer
 * committed. The restarted server resumes it; with no call pending, runAgent goes straight to a
 * new model request, so the model is asked again after it already answered without tool calls:
 * a second, duplicate answer is committed (and paid for), and a turn is counted that law 2
 * ("the loop stops because the model made no tool call") says never happens.
 *
 * Expected: a resumed run whose last committed message is the model's reply without tool calls
 * ends `complete` with that reply, without another model request.
 */
import { afterEach, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("a planning run left between its final answer and its end completes on resume without asking the model again", async () => {
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());

  // Once the final answer has been asked for, the next read of the run's plan (finishRun's, which
  // comes after the answer is written alone) waits until the test lets it go.
  let answerServed = false;
  let held = false;
  let heldSignal!: () => void;
  const planReadHeld = new Promise<void>((resolve) => {
    heldSignal = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const first: TestServer = await startTestServer({
    upstream,
    env: { ON_RESTART: "resume" },
    wrapStore: (store) =>
      aroundStore(store, "events", (name, _args, call) => {
        if (name !== "lastPlan" || !answerServed || held) return call();
        held = true;
        heldSignal();
        return released.then(call);
      }),
  });
  let firstClosed = false;
  cleanups.push(() => (firstClosed ? undefined : first.close()));

  upstream.enqueue(
    {
      toolCalls: [
        { id: "call_plan", name: "create_plan", arguments: JSON.stringify({ steps: [{ title: "answer" }] }) },
      ],
    },
    {
      text: "The answer is 42.",
      onRequest: () => {
        answerServed = true;
      },
    },
  );
  const session = (await first.request("POST", "/sessions", { body: { planning: true } })).body;
  const run = (await first.request("POST", `/sessions/${session.id}/runs`, { body: { input: "What is the answer?" } }))
    .body;

  // The answer is committed, and the run's end is being prepared (its plan read, held here).
  await planReadHeld;
  // Shutdown with resume now (the run is left at once), then let the end's preparation go on.
  const closing = first.close({ keepDir: true, resume: true });
  release();
  await closing;
  firstClosed = true;
  const requestsBefore = upstream.requests.length;
  expect(requestsBefore).toBe(2);

  // Were the model asked again, it would answer a second time.
  upstream.enqueue({ text: "The answer is still 42." });
  const second = await startTestServer({ upstream, env: { ON_RESTART: "resume" }, dir: first.dir });
  cleanups.push(() => second.close());

  const finished = await until(
    async () => (await second.request("GET", `/runs/${run.id}`)).body,
    (r) => r.status === "finished",
    "the resumed run to finish",
  );
  const messages = (await second.request("GET", `/sessions/${session.id}/messages`)).body.items as {
    role: string;
    content: string;
  }[];
  expect({
    stopReason: finished.stopReason,
    modelRequests: upstream.requests.length,
    answers: messages.filter((m) => m.role === "assistant" && m.content !== "").map((m) => m.content),
  }).toEqual({
    stopReason: "complete",
    modelRequests: 2,
    answers: ["The answer is 42."],
  });
});
