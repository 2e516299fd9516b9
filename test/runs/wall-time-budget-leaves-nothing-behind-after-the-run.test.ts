/**
 * A run's wall-time budget (`maxDurationMs`, or DEFAULT_MAX_DURATION_MS for every run) arms a
 * deadline for every model request, every wait for approval and every tool (withDeadline in
 * src/agent/budget.ts): an AbortSignal.timeout of the budget left, with an abort listener that
 * is never removed. A timeout signal with a listener is kept alive by Node until it fires, and
 * with it the listener's AbortController, its signal and the AbortSignal.any joining it to the
 * run's: about 2 KB per model request or tool call, held after the run has ended, for as long
 * as the budget (up to 24.8 days: effectively for good). So every run under a budget leaves
 * memory behind that grows linearly with the turns and tool calls the server has executed.
 *
 * The deadline's signals should be released when the request, wait or tool they bound is over.
 */
import { queryObjects } from "node:v8";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const CALLS = 60;

/** Live AbortControllers in this process (the server runs in it), after a full collection. */
const controllers = () => queryObjects(AbortController, { format: "count" }) as number;

describe("a run under a wall-time budget", () => {
  let server: TestServer;
  beforeAll(async () => {
    // A count is a full collection, seconds long on a loaded machine, with the event loop held:
    // a server closing its idle keep-alive connection meanwhile (5 s by default) would reset
    // the next request, sent on it before the close is seen.
    server = await startTestServer({ env: { KEEP_ALIVE_TIMEOUT_MS: "600000" } });
  });
  afterAll(() => server.close());

  /** A finished run of one reply of CALLS list_files calls, then a final answer. */
  async function run(body: Record<string, unknown>): Promise<void> {
    server.upstream.enqueue(
      {
        toolCalls: Array.from({ length: CALLS }, (_, i) => ({ id: `call_${i}`, name: "list_files", arguments: "{}" })),
      },
      { text: "done" },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body as { id: string };
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "list it", loopRepeatLimit: 0, ...body },
    });
    expect(waited.body.run.stopReason).toBe("complete");
    expect(waited.body.run.stats.toolCalls).toBe(CALLS);
    const deleted = await server.request("DELETE", `/sessions/${session.id}`);
    expect(deleted.status).toBe(204);
  }

  it("holds no more memory once it has finished than a run without one", async () => {
    await run({}); // warm up: modules, caches, pools
    // Three counts, each a full collection (seconds in a worker that has run many files).
    const before = controllers();
    await run({});
    const between = controllers();
    await run({ maxDurationMs: 2_147_483_647 });
    const withoutBudget = between - before;
    const withBudget = controllers() - between;
    // Before the fix: one controller kept per model request, approval wait and tool (2 + 2 * 60),
    // each with its timeout signal, timer and joined signal, for the budget's 24.8 days.
    // (The files before this one share its process: one's controllers collected during the run
    // without a budget do not count as room for this run's.)
    expect(withBudget - Math.max(0, withoutBudget)).toBeLessThan(10);
  }, 60_000);
});
