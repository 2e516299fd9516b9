/**
 * A decision posted to a resumed run while its approval gate reads the ledger (before the
 * gate has a waiter): the decision goes through `resolveApproval` (path "resumed, not reached
 * yet"), which writes `approval.resolved`; the gate, having read the ledger before that write,
 * then asks again and finds the decision on its second read: it announced it once more (one
 * decision, two `approval.resolved` events). Now a decision announced already is only applied.
 */
import { afterEach, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const servers: TestServer[] = [];
let upstream: FakeUpstream | null = null;
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  await upstream?.close();
  upstream = null;
});

it("a decision posted while a resumed run's gate reads the ledger is announced once", async () => {
  upstream = await startFakeUpstream();
  const env = { ON_RESTART: "resume" };
  const first = await startTestServer({ env, upstream });
  const { runId } = await runAwaitingApproval(first);
  await first.close({ keepDir: true, resume: true });

  // The gate's first ledger read (the resumed run's) is read at once and answered late.
  let held = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const wrapStore = (store: Store) =>
    aroundStore(store, "toolCalls", (name, _args, call) => {
      if (name !== "get" || held) return call();
      held = true;
      const value = call();
      return released.then(() => value);
    });
  upstream.enqueue({ text: "done" });
  const second = await startTestServer({ env, upstream, dir: first.dir, wrapStore });
  servers.push(second);
  await until(
    async () => held,
    (h) => h,
    "the resumed gate's ledger read",
  );
  const decided = await second.request("POST", `/runs/${runId}/approvals/call_w`, { body: { decision: "approve" } });
  expect(decided.status).toBe(200);
  release();

  const run = await finishedRun(second, runId);
  expect(run.stopReason).toBe("complete");
  const events = (await second.request("GET", `/runs/${runId}/events?after=0`, {})).body as string;
  const resolved = events.split("\n").filter((line) => line === "event: approval.resolved");
  expect(resolved).toHaveLength(1);
});
