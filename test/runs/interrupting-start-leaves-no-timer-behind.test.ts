/**
 * An interrupting start (`ifBusy: "interrupt"`) waits for the interrupted run's end, at most
 * 10 s. Once the end has come, nothing of that wait is left: its timer is cleared, not left
 * armed for the rest of the 10 s (one timer and its promise per interrupt, held whatever the
 * rate of interrupts).
 */
import { queryObjects } from "node:v8";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const INTERRUPTS = 15;
/** The class of Node's timers (setTimeout's handles): not exported, read off one. */
const Timeout = (() => {
  const timer = setTimeout(() => {}, 0);
  clearTimeout(timer);
  return timer.constructor as new (
    ...args: unknown[]
  ) => unknown;
})();
/** Live timers of this process (the server runs in it), after a full collection. */
const timers = () => queryObjects(Timeout, { format: "count" }) as number;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { KEEP_ALIVE_TIMEOUT_MS: "600000" } });
  server.upstream.fallback = () => ({ text: "done" });
});
afterAll(() => server.close());

/** INTERRUPTS sessions, each with a run awaiting approval interrupted by a new start that completes. */
async function interrupts(): Promise<void> {
  for (let i = 0; i < INTERRUPTS; i++) {
    const { sessionId } = await runAwaitingApproval(server);
    const started = await server.request("POST", `/sessions/${sessionId}/runs?wait=true`, {
      body: { input: "instead", ifBusy: "interrupt" },
    });
    expect(started.body.run?.stopReason).toBe("complete");
  }
}

it("interrupting starts whose interrupted runs ended leave no armed timer behind", async () => {
  await interrupts(); // warm up: modules, caches, pools
  const before = timers();
  await interrupts();
  // Before the fix: one 10 s timer per interrupt still armed here (all of these ended within it).
  expect(timers() - before).toBeLessThan(INTERRUPTS / 2);
}, 60_000);
