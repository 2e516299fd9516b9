/**
 * README, Durability: "After a crash (even `kill -9`) no committed message is lost: at start
 * the server finds the runs that were live, gives a tool call that had started but not finished
 * an 'interrupted, outcome unknown' error result (it is never executed twice), and then, per
 * ON_RESTART, resumes each run ... It resumes no more runs than MAX_CONCURRENT_RUNS allows: over
 * a SQLite file the others are held". product.md: kill -9 "leaves no tool call without a result
 * once the server is back".
 *
 * Two runs are killed (kill -9) while their shell tools run. The server is restarted with
 * MAX_CONCURRENT_RUNS=1: one run is resumed (it gets its INTERRUPTED result and asks the model
 * again, a request that takes its time), the other is held for a slot. Before, the held run's
 * session kept, for as long as the slot stayed taken (an approval wait can take 15 minutes),
 * an assistant message whose tool call had no result (law 4), the ledger saying the tool still
 * ran: the INTERRUPTED result was written only when the held run was resumed.
 *
 * Expected: once the server is back, every started call of every left run has its INTERRUPTED
 * result, held or not (closing a started call executes nothing and needs no slot).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { assertValidHistory } from "../../src/agent/history.js";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { hostPids } from "../helpers/processes.js";
import { openSse } from "../helpers/sse-client.js";

const crash = crashHarness({ instanceId: "review-dur-held" });
const never = new Promise<void>(() => {});

describe("kill -9 with more left runs than free slots (sqlite)", () => {
  beforeEach(() => crash.prepare("sqlite"));

  it("a run held for a slot has its interrupted call closed at start", async () => {
    const a = await crash.start();
    const sleeps = ["sleep 31.871", "sleep 31.872"];
    const runs: { sessionId: string; runId: string; callId: string }[] = [];
    for (const [i, sleep] of sleeps.entries()) {
      const callId = `call_held_${i}`;
      crash.upstream.enqueue({
        toolCalls: [{ id: callId, name: "shell", arguments: JSON.stringify({ command: sleep }) }],
      });
      const session = await api(a.url, "POST", "/sessions", { approval: { tools: { shell: "allow" } } });
      expect(session.status).toBe(201);
      const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: `go ${i}` });
      expect(run.status).toBe(201);
      const watcher = await openSse(`${a.url}/runs/${run.body.id}/events`);
      await watcher.waitFor((e) => e.event === "tool.started");
      watcher.close();
      runs.push({ sessionId: session.body.id, runId: run.body.id, callId });
    }
    await crash.kill(a);
    // The commands die with the server; any straggler is not this test's subject.
    for (const sleep of sleeps) for (const pid of hostPids(new RegExp(`^${sleep}$`))) process.kill(pid, "SIGKILL");

    // The resumed run asks the model again and waits for its reply, keeping the only slot.
    crash.upstream.enqueue({ text: ["thinking"], gate: never });
    const b = await crash.restart({ env: { MAX_CONCURRENT_RUNS: "1" } });
    await expect.poll(() => crash.upstream.requests.length, { timeout: 10_000 }).toBe(3);

    const statuses = await Promise.all(
      runs.map(async (r) => (await api(b.url, "GET", `/runs/${r.runId}`)).body.status),
    );
    // One run executes, the other is held (still `running`, as documented).
    expect(statuses).toEqual(["running", "running"]);

    for (const r of runs) {
      await expect
        .poll(
          async () => {
            const items = (await api(b.url, "GET", `/sessions/${r.sessionId}/messages`)).body.items as {
              role: string;
              toolCallId?: string;
              metadata?: { errorCode?: string };
            }[];
            return items.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m.metadata?.errorCode]);
          },
          { timeout: 5_000, message: `run ${r.runId}: its interrupted call has a result once the server is back` },
        )
        .toEqual([[r.callId, "INTERRUPTED"]]);
      const history = (await api(b.url, "GET", `/sessions/${r.sessionId}/messages`)).body.items;
      expect(() => assertValidHistory(history)).not.toThrow();
    }
  }, 60_000);
});
