import { describe, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import { observedSeams } from "../../src/observability/observed-seams.js";
import type { CommittedBatch, Delivery } from "../../src/observability/observer.js";
import { cancelRequested, ownerRunsFull, StorageError } from "../../src/store/errors.js";
import type { RunChange, Store, StoredEvent } from "../../src/store/store.js";

/** When run_unanswered's end was stored. */
const STORED_END = "2024-01-01T00:00:01.000Z";

/**
 * A store whose commits resolve with a new array of the events given, as both stores do; run_refused's
 * are refused by a rule of the data, run_failed's fail; so are the starts of the queues of ses_refused
 * and ses_failed. run_unanswered's commits get no answer (their outcome unknown); read back (once
 * `readBack` resolves), it is finished at STORED_END.
 */
function fakeStore({ readBack = Promise.resolve() }: { readBack?: Promise<void> } = {}): Store {
  const stored = (events: readonly { runId: string; seq: number; type: string }[]): StoredEvent[] =>
    events.map((e) => ({ seq: e.seq, type: e.type, data: JSON.stringify(e) }));
  return {
    runs: {
      get: async (id: string) => {
        await readBack;
        return id === "run_unanswered" ? { id, status: "finished", finishedAt: STORED_END } : null;
      },
      // Session ses_q has run_q queued; any other session, nothing.
      startQueued: async (sessionId: string, at: string) => {
        if (sessionId === "ses_refused") throw ownerRunsFull({ owner: "key", max: 1 });
        if (sessionId === "ses_failed") throw new StorageError("io", "disk I/O error");
        return sessionId === "ses_q"
          ? {
              run: { id: "run_q", sessionId, status: "running" },
              events: stored([{ type: "run.started", runId: "run_q", seq: 2, at } as never]),
              lease: { runId: "run_q", owner: "me", epoch: 1 },
            }
          : null;
      },
    },
    commitRun: async (runId: string, _changes: unknown, events: never[]) => {
      if (runId === "run_refused") throw cancelRequested(runId);
      if (runId === "run_failed") throw new StorageError("io", "disk I/O error");
      if (runId === "run_unanswered") {
        throw new StorageError("unavailable", "Connection terminated unexpectedly", { outcomeUnknown: true });
      }
      return stored(events);
    },
  } as unknown as Store;
}

const event = (runId: string, seq: number) => ({ type: "text.delta", text: "x", runId, seq, at: "" }) as never;

function observed() {
  const commits: CommittedBatch[] = [];
  const deliveries: Delivery[] = [];
  const seams = observedSeams(fakeStore(), {
    committed: (batch) => commits.push(batch),
    delivered: (delivery) => deliveries.push(delivery),
    left: () => {},
  });
  return { ...seams, commits, deliveries };
}

describe("the store and hub every run goes through, observed", () => {
  it("each commit published to watchers is one delivery, with its events, watchers and lag", async () => {
    const { store, hub, commits, deliveries } = observed();
    hub.subscribe("run_a", () => {});
    hub.subscribe("run_a", () => {});
    hub.subscribe("run_b", () => {});
    for (let seq = 1; seq <= 3; seq++) {
      const [a, b] = await Promise.all([
        store.commitRun("run_a", [], [event("run_a", seq), event("run_a", seq + 10)]),
        store.commitRun("run_b", [], [event("run_b", seq)]),
      ]);
      hub.publish("run_a", a);
      hub.publish("run_b", b);
    }
    expect(commits.map((c) => [c.runId, c.outcome])).toEqual(
      Array(3)
        .fill([
          ["run_a", "ok"],
          ["run_b", "ok"],
        ])
        .flat(),
    );
    expect(deliveries.map((d) => [d.runId, d.events, d.watchers])).toEqual(
      Array(3)
        .fill([
          ["run_a", 2, 2],
          ["run_b", 1, 1],
        ])
        .flat(),
    );
    for (const d of deliveries) expect(d.lagSeconds).toBeGreaterThanOrEqual(0);
  });

  it("a delivery is counted once, for the array its commit resolved with, and none without watchers", async () => {
    const { store, hub, deliveries } = observed();
    const unwatched = await store.commitRun("run_a", [], [event("run_a", 1)]);
    hub.publish("run_a", unwatched);
    expect(deliveries).toHaveLength(0);

    hub.subscribe("run_a", () => {});
    const events = await store.commitRun("run_a", [], [event("run_a", 2)]);
    hub.publish("run_a", [...events]); // not the commit's own array: no commit time to report from
    hub.publish("run_a", events);
    hub.publish("run_a", events); // published again: already reported
    expect(deliveries).toHaveLength(1);
  });

  it("a write refused by a rule of the data is a conflict, not an error; a failed one is an error", async () => {
    const { store, commits } = observed();
    await expect(store.commitRun("run_refused", [], [event("run_refused", 1)])).rejects.toThrow("cancelled");
    await expect(store.commitRun("run_failed", [], [event("run_failed", 1)])).rejects.toThrow("disk I/O error");
    expect(commits.map((c) => [c.runId, c.outcome])).toEqual([
      ["run_refused", "conflict"],
      ["run_failed", "error"],
    ]);
  });

  it("a write holding its run's end that got no answer is told once read back: ok when the run holds that end; the run leaves after", async () => {
    const told: string[] = [];
    let read = () => {};
    const readBack = new Promise<void>((resolve) => {
      read = resolve;
    });
    const { store, left } = observedSeams(fakeStore({ readBack }), {
      committed: ({ runId, outcome }) => told.push(`committed ${runId} ${outcome}`),
      delivered: () => {},
      left: ({ runId }) => told.push(`left ${runId}`),
    });
    const end = (finishedAt: string) =>
      ({
        kind: "finish",
        stopReason: "complete",
        stopDetail: null,
        error: null,
        stats: emptyStats(),
        finishedAt,
      }) as const;
    const write = (changes: RunChange[]) =>
      expect(store.commitRun("run_unanswered", changes, [event("run_unanswered", 1)])).rejects.toThrow("terminated");
    await write([end(STORED_END)]);
    // Given up here while its write is read back: told after it.
    left("run_unanswered");
    expect(told).toEqual([]);
    read();
    await expect.poll(() => told).toEqual(["committed run_unanswered ok", "left run_unanswered"]);

    // An end the run does not hold (another was stored) was not stored by this write.
    told.length = 0;
    await write([end("2024-01-01T00:00:02.000Z")]);
    await expect.poll(() => told).toEqual(["committed run_unanswered error"]);
    // A write holding no end is told at once, read back by nobody.
    told.length = 0;
    await write([]);
    expect(told).toEqual(["committed run_unanswered error"]);
  });

  it("a queued run's start is a commit of the run with its run.started, delivered like any other", async () => {
    const { store, hub, commits, deliveries } = observed();
    hub.subscribe("run_q", () => {});
    expect(await store.runs.startQueued("ses_none", "", { owner: "me", ttlMs: 1000 })).toBeNull();
    const started = await store.runs.startQueued("ses_q", "2024-01-01T00:00:00.000Z", { owner: "me", ttlMs: 1000 });
    hub.publish("run_q", started?.events ?? []);
    // The start that started nothing names no run: not reported.
    expect(commits.map((c) => [c.runId, c.operation, c.run?.status, c.events.map((e) => e.type), c.outcome])).toEqual([
      ["run_q", "commit_run", "running", ["run.started"], "ok"],
    ]);
    expect(deliveries.map((d) => [d.runId, d.events, d.watchers])).toEqual([["run_q", 1, 1]]);
  });

  it("a queued run's start refused by a rule of the data is a conflict, a failed one an error, both naming no run", async () => {
    const { store, commits } = observed();
    const lease = { owner: "me", ttlMs: 1000 };
    await expect(store.runs.startQueued("ses_refused", "", lease)).rejects.toThrow("unfinished runs");
    await expect(store.runs.startQueued("ses_failed", "", lease)).rejects.toThrow("disk I/O error");
    expect(commits.map((c) => [c.runId, c.operation, c.events.length, c.outcome])).toEqual([
      [null, "commit_run", 0, "conflict"],
      [null, "commit_run", 0, "error"],
    ]);
  });
});
