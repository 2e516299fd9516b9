import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { Checkpointer, type WalRestart } from "../../src/store/checkpointer.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PAGE = 4096;
/** A WAL frame: a page and its 24-byte header. */
const FRAME = PAGE + 24;

describe("WAL checkpoints run on a worker thread, not inside commits", () => {
  let dir: ReturnType<typeof tempDir> | null = null;
  let store: Store | null = null;
  afterEach(async () => {
    await store?.close();
    store = null;
    dir?.cleanup();
    dir = null;
  });

  async function writeEvents(s: Store, count: number, chars = 200): Promise<void> {
    await seedSession(s, { id: "ses_c" });
    await s.runs.create(runRecord({ id: "run_c", sessionId: "ses_c" }), []);
    const text = "x".repeat(chars);
    for (let seq = 1; seq <= count; seq++) {
      await s.commitRun("run_c", [], [{ type: "text.delta", text, runId: "run_c", seq, at: "t" }]);
    }
  }

  it("the worker copies the WAL into the database file and reports each checkpoint's duration", async () => {
    dir = tempDir("checkpoint-");
    const path = join(dir.path, "agent.db");
    const reported: number[] = [];
    store = openSqliteStore({ path, checkpointIntervalMs: 50, onCheckpoint: (ms) => reported.push(ms) });
    const before = statSync(path).size;
    await writeEvents(store, 500);
    // Waited for with a deadline (10 s), not a count of tries: a loaded machine's worker thread
    // may take more than the 2 s that 100 tries of 20 ms came to.
    await until(
      () => reported.length,
      (n) => n > 0,
      "a checkpoint to be reported",
    );
    expect(reported.every((ms) => ms >= 0)).toBe(true);
    // The events' pages reached the database file itself, by the worker's checkpoint alone.
    await until(
      () => statSync(path).size,
      (size) => size > before,
      "the database file to grow",
    );
  });

  it("nothing is checkpointed inside a commit: without the worker's pass the database file does not grow", async () => {
    dir = tempDir("checkpoint-");
    const path = join(dir.path, "agent.db");
    store = openSqliteStore({ path, checkpointIntervalMs: 3_600_000 });
    const before = statSync(path).size;
    await writeEvents(store, 6000, 1500);
    // Past the 10,000 frames at which SQLite's own checkpoint would have run inside a commit.
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(10_000 * 4096);
    expect(statSync(path).size).toBe(before);
  });

  it("close checkpoints what is left and releases the file: it reopens, here or in another connection", async () => {
    dir = tempDir("checkpoint-");
    const path = join(dir.path, "agent.db");
    const first = openSqliteStore({ path, checkpointIntervalMs: 3_600_000 });
    await writeEvents(first, 50);
    await first.close();
    expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0);
    const plain = new Database(path, { readonly: true });
    expect((plain.prepare("SELECT count(*) AS n FROM run_events").get() as { n: number }).n).toBe(50);
    plain.close();
    store = openSqliteStore({ path });
    expect(await store.events.lastSeq("run_c")).toBe(50);
  });

  it("a worker that cannot run is reported lost (the store then checkpoints inside commits again)", async () => {
    dir = tempDir("checkpoint-");
    const errors: string[] = [];
    let reportLost!: () => void;
    const lost = new Promise<void>((resolve) => {
      reportLost = resolve;
    });
    const checkpointer = new Checkpointer({
      path: join(dir.path, "missing", "agent.db"),
      onError: (message) => errors.push(message),
      onLost: () => reportLost(),
    });
    await lost;
    await checkpointer.close();
    expect(errors.join(" ")).toMatch(/unable to open|directory does not exist|no such file/i);
  });

  it("a second store on the same file in this process is refused while the first is open", async () => {
    dir = tempDir("checkpoint-");
    const path = join(dir.path, "agent.db");
    store = openSqliteStore({ path });
    expect(() => openSqliteStore({ path })).toThrow(/in use by another process/);
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
    // (A write a tick, for up to 5 s: a slow disk may take several ticks to copy what is left.)
    const holdsBefore = restarts.length;
    const limit = 32 + 2 * restartFrames * FRAME;
    let seq = written.get("run_w0") ?? 0;
    for (let i = 0; i < 250 && (i === 0 || statSync(`${path}-wal`).size > limit); i++) {
      await sleep(20);
      seq++;
      await s.commitRun("run_w0", [], [{ type: "text.delta", text, runId: "run_w0", seq, at: "t" }]);
    }
    expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(limit);
    expect(restarts.length - holdsBefore).toBeLessThanOrEqual(1);
  });
});
