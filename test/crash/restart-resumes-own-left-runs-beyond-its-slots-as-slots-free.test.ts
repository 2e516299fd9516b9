/**
 * README, Running several instances: "A restart of the same instance (the same INSTANCE_ID)
 * takes its own runs back at start". Over PostgreSQL a restart resumes only as many of its own
 * runs as it has free slots; the others kept the lease of the process that was killed, which
 * the reaper (claiming runs whose lease expired) took only once it expired: a whole
 * RUN_LEASE_MS after the slot freed. Now the reaper takes them as soon as a slot frees.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { finishedRun, until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "own-left-beyond-slots" });

describe("a restart with more own left runs to resume than free slots (postgres)", () => {
  beforeEach(() => crash.prepare("postgres"));

  it("resumes the run it left for want of a slot once its resumed run ends, not once the old lease expires", async () => {
    // Leases of ten minutes: the left run's would hold it far beyond this test.
    const a = await crash.start({ RUN_LEASE_MS: "600000" });
    const runIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      crash.upstream.enqueue({
        toolCalls: [{ id: `call_${i}`, name: "shell", arguments: JSON.stringify({ command: `echo ${i}` }) }],
      });
      const session = await api(a.url, "POST", "/sessions", {});
      const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: `go ${i}` });
      expect(run.status).toBe(201);
      runIds.push(run.body.id);
      await until(
        () => api(a.url, "GET", `/runs/${run.body.id}`),
        (r) => r.body?.status === "awaiting_approval",
        "the approval request",
      );
    }
    await crash.kill(a);

    const b = await crash.restart({ env: { MAX_CONCURRENT_RUNS: "1" } });
    // One run is resumed (its approval awaited again), the other waits for the slot.
    const resumed = runIds.filter((id) => b.ctx.manager.executes(id));
    expect(resumed).toHaveLength(1);
    const [first, second] = [resumed[0] as string, runIds.find((id) => id !== resumed[0]) as string];

    crash.upstream.enqueue({ text: "done" });
    const approved = await b.request("POST", `/runs/${first}/approvals/call_${runIds.indexOf(first)}`, {
      body: { decision: "approve" },
    });
    expect(approved.status).toBe(200);
    expect((await finishedRun(b, first)).stopReason).toBe("complete");

    // The freed slot goes to the other run: resumed here, its approval is awaited again.
    await expect.poll(() => b.ctx.manager.executes(second), { message: "the left run is resumed" }).toBe(true);
    crash.upstream.enqueue({ text: "done too" });
    const again = await b.request("POST", `/runs/${second}/approvals/call_${runIds.indexOf(second)}`, {
      body: { decision: "approve" },
    });
    expect(again.status).toBe(200);
    expect((await finishedRun(b, second)).stopReason).toBe("complete");
  }, 60_000);
});
