import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { WalRestart } from "../../src/store/checkpointer.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

const PAGE = 4096;
const FRAME = PAGE + 24;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the WAL stays bounded under writes that never pause", () => {
  let dir: ReturnType<typeof tempDir> | null = null;
  let store: Store | null = null;
  afterEach(async () => {
    await store?.close();
    store = null;
    dir?.cleanup();
    dir = null;
  });

  it("writers committing back to back leave a WAL of a few restart sizes, every write kept; once they stop, one more write cuts the file back", async () => {
    dir = tempDir("wal-bound-");
    const path = join(dir.path, "agent.db");
    const restartFrames = 1000;
    const restarts: WalRestart[] = [];
    store = openSqliteStore({
      path,
      checkpointIntervalMs: 20,
      walRestartFrames: restartFrames,
      onWalRestart: (fact) => restarts.push(fact),
    });
    const s = store;
    // Streaming runs: each commits a text delta as soon as the last one is stored, so some
    // group of writes is waiting at every moment (no quiet spell in which a checkpoint catches up).
    const runs = Array.from({ length: 24 }, (_, i) => `run_w${i}`);
    for (const id of runs) {
      await seedSession(s, { id: `ses_${id}` });
      await s.runs.create(runRecord({ id, sessionId: `ses_${id}` }), []);
    }
    const text = "y".repeat(300);
    const written = new Map(runs.map((id) => [id, 0]));
    // About a frame a write: without restarts the WAL would reach ~25 restart sizes (and did, ~43).
    const target = 25 * restartFrames;
    let total = 0;
    let largestWal = 0;
    const until = performance.now() + 20_000;
    const writer = async (runId: string) => {
      while (total < target && performance.now() < until) {
        const seq = (written.get(runId) ?? 0) + 1;
        await s.commitRun(runId, [], [{ type: "text.delta", text, runId, seq, at: "t" }]);
        written.set(runId, seq);
        total++;
        largestWal = Math.max(largestWal, statSync(`${path}-wal`).size);
      }
    };
    await Promise.all(runs.map(writer));

    expect(total).toBeGreaterThanOrEqual(target);
    expect(restarts.some((r) => r.complete)).toBe(true);
    expect(largestWal).toBeLessThan(8 * restartFrames * FRAME);
    for (const id of runs) expect(await s.events.lastSeq(id)).toBe(written.get(id));

    // Idle, the worker copies what is left without holding anything; the next commit
    // restarts the WAL and cuts its file back to twice the restart size.
    const holdsBefore = restarts.length;
    await sleep(200);
    await s.commitRun("run_w0", [], [{ type: "text.delta", text, runId: "run_w0", seq: total + 1, at: "t" }]);
    expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(32 + 2 * restartFrames * FRAME);
    expect(restarts.length - holdsBefore).toBeLessThanOrEqual(1);
  });
});
