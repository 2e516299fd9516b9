import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

const PAGE = 4096;

describe("the WAL stays bounded under writes that never pause", () => {
  let dir: ReturnType<typeof tempDir> | null = null;
  let store: Store | null = null;
  afterEach(async () => {
    await store?.close();
    store = null;
    dir?.cleanup();
    dir = null;
  });

  it("writers committing back to back for seconds leave a WAL of about the restart size, and every write is kept", async () => {
    dir = tempDir("wal-bound-");
    const path = join(dir.path, "agent.db");
    const restartFrames = 1000;
    const restarts: number[] = [];
    store = openSqliteStore({
      path,
      checkpointIntervalMs: 20,
      walRestartFrames: restartFrames,
      onWalRestart: (heldMs) => restarts.push(heldMs),
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
    let largestWal = 0;
    const until = performance.now() + 2500;
    const writer = async (runId: string) => {
      while (performance.now() < until) {
        const seq = (written.get(runId) ?? 0) + 1;
        await s.commitRun(runId, [], [{ type: "text.delta", text, runId, seq, at: "t" }]);
        written.set(runId, seq);
        largestWal = Math.max(largestWal, statSync(`${path}-wal`).size);
      }
    };
    await Promise.all(runs.map(writer));

    const total = [...written.values()].reduce((a, b) => a + b, 0);
    // Enough was written that an unbounded WAL would be many times the restart size.
    expect(total * PAGE).toBeGreaterThan(20 * restartFrames * PAGE);
    expect(largestWal).toBeLessThan(4 * restartFrames * (PAGE + 24));
    expect(restarts.length).toBeGreaterThan(0);
    for (const id of runs) expect(await s.events.lastSeq(id)).toBe(written.get(id));
  });
});
