/**
 * README, Running several instances: "A restart of the same instance (the same INSTANCE_ID)
 * takes its own runs back at start"; "A run to end (cancelled, or any run with
 * ON_RESTART=abort) executes nothing and needs no room: it is claimed and ended `aborted`
 * whatever the instance's free slots". Durability: "No run is left `running` without an owner
 * once the server is up".
 *
 * An instance is killed (kill -9) with two runs awaiting approval over PostgreSQL, and
 * restarted with the same INSTANCE_ID and ON_RESTART=abort, MAX_CONCURRENT_RUNS=1. Before, its
 * start-up claim took only as many of its own runs as it had free slots (one), although ending a
 * run needs no slot: the other run stayed `running` (awaiting an approval nobody would act on,
 * its session busy, its watchers waiting) until its old lease expired and the reaper took it,
 * RUN_LEASE_MS later (30 s by default, up to an hour as configured).
 *
 * Expected: both runs end `aborted` at the restart, right after its recovery.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "review-dur-abort-slots" });

describe("ON_RESTART=abort over PostgreSQL with more own left runs than free slots", () => {
  beforeEach(() => crash.prepare("postgres"));

  it("ends every run the instance left at its restart, not one per free slot", async () => {
    const a = await crash.start();
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

    const b = await crash.restart({ env: { ON_RESTART: "abort", MAX_CONCURRENT_RUNS: "1" } });
    // The start-up recovery is done (restart resolves after it); ending a run takes no slot and
    // both runs are this instance's own. 5 s is far below the old lease's 30 s.
    for (const runId of runIds) {
      await expect
        .poll(
          async () => {
            const { body } = await api(b.url, "GET", `/runs/${runId}`);
            return [body.status, body.stopReason];
          },
          { timeout: 5_000, message: `run ${runId} ends aborted at the restart` },
        )
        .toEqual(["finished", "aborted"]);
    }
  }, 60_000);
});
