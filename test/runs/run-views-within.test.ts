import { describe, expect, it } from "vitest";
import { runViewsWithin } from "../../src/runs/run-plan.js";
import { jsonBytes } from "../../src/store/page.js";
import { runView } from "../../src/store/runs.js";
import type { RunRecord, Store } from "../../src/store/store.js";
import { runRecord } from "../helpers/seed.js";

/** A plan.updated event as stored, of one step named `title`. */
const planEvent = (runId: string, title: string) =>
  JSON.stringify({ type: "plan.updated", runId, seq: 3, at: "x", plan: { steps: [{ title, status: "pending" }] } });

/** A store holding only the runs' last plan events, counting the bytes of JSON it hands back. */
function planEvents(events: Record<string, string>) {
  const read = { bytes: 0 };
  const store = {
    events: {
      lastPlan: async (runId: string, within: number) => {
        const data = events[runId];
        if (data === undefined) return null;
        const bytes = Buffer.byteLength(data);
        if (bytes <= within) read.bytes += bytes;
        return { bytes, data: bytes <= within ? data : null };
      },
    },
  } as unknown as Store;
  return { store, read };
}

describe("a page of runs with their plans", () => {
  const runs: RunRecord[] = ["a", "b", "c", "d"].map((n) =>
    runRecord({ id: `run_${n}`, sessionId: "ses_1", planning: true }),
  );
  const viewBytes = jsonBytes(runView(runs[0] as RunRecord, null));

  it("holds the runs whose plans fit its bytes, in order, and reads no plan it leaves out", async () => {
    const big = (n: string) => planEvent(`run_${n}`, n.repeat(40_000));
    const { store, read } = planEvents({ run_a: big("a"), run_b: big("b"), run_c: big("c"), run_d: big("d") });
    const views = await runViewsWithin(store, runs, 2 * (viewBytes + 40_200) + 128);
    expect(views.map((v) => [v.id, v.plan?.steps[0]?.title.length])).toEqual([
      ["run_a", 40_000],
      ["run_b", 40_000],
    ]);
    expect(read.bytes).toBeLessThan(2 * 40_200);
  });

  it("holds at least one run, however large its plan, and every run when the plans are small or absent", async () => {
    const { store } = planEvents({ run_a: planEvent("run_a", "x".repeat(50_000)), run_c: planEvent("run_c", "c") });
    expect((await runViewsWithin(store, runs, 1_000)).map((v) => v.id)).toEqual(["run_a"]);
    const all = await runViewsWithin(store, runs, 1024 * 1024);
    expect(all.map((v) => [v.id, v.plan?.steps[0]?.title.length ?? null])).toEqual([
      ["run_a", 50_000],
      ["run_b", null],
      ["run_c", 1],
      ["run_d", null],
    ]);
  });
});
