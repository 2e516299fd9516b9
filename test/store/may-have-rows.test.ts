import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MayHaveRows } from "../../src/store/may-have-rows.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

describe("MayHaveRows", () => {
  it("reads only keys found at open or written since, and forgets a key read empty once its writes settled", async () => {
    const reads: string[] = [];
    const rows = new Map<string, number[]>([["a", [1]]]);
    const may = new MayHaveRows(["a"]);
    const read = (key: string) => () => {
      reads.push(key);
      return rows.get(key) ?? [];
    };
    expect(may.rows("a", read("a"))).toEqual([1]);
    expect(may.rows("b", read("b"))).toEqual([]);
    expect(reads).toEqual(["a"]);

    let commit!: () => void;
    const written = may.adding("b", () => new Promise<void>((resolve) => (commit = resolve)));
    // Read while the write is unsettled: nothing yet, and the key is kept.
    expect(may.rows("b", read("b"))).toEqual([]);
    rows.set("b", [2]);
    commit();
    await written;
    expect(may.rows("b", read("b"))).toEqual([2]);
    rows.delete("b");
    expect(may.rows("b", read("b"))).toEqual([]);
    // Read empty with nothing unsettled: forgotten, not read again.
    expect(may.rows("b", read("b"))).toEqual([]);
    expect(reads).toEqual(["a", "b", "b", "b"]);
    expect(may.size).toBe(1);

    // A key not asked about any more (a finished run, a deleted session) is dropped at once.
    await may.adding("d", () => Promise.resolve());
    expect(may.size).toBe(2);
    may.forget("d");
    expect(may.size).toBe(1);
    expect(may.rows("d", read("d"))).toEqual([]);
    expect(reads).not.toContain("d");

    // A write that failed leaves the key to one more read.
    await expect(may.adding("c", () => Promise.reject(new Error("disk full")))).rejects.toThrow("disk full");
    expect(may.rows("c", read("c"))).toEqual([]);
    expect(may.rows("c", read("c"))).toEqual([]);
    expect(reads.filter((k) => k === "c")).toHaveLength(1);
  });
});

describe("the SQLite store's queued runs and steered inputs, answered without a read when none can exist", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: Store;
  const path = () => join(dir.path, "a.db");
  const input = (id: string) => ({ id, runId: "run_1", content: `input ${id}`, createdAt: new Date().toISOString() });

  beforeEach(async () => {
    dir = tempDir();
    store = openSqliteStore({ path: path() });
    await seedSession(store, { id: "ses_1" });
    await store.runs.create(runRecord({ id: "run_1", sessionId: "ses_1" }), []);
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  it("an input is found once its write committed, also when read while it waited in a group, and after a restart", async () => {
    expect(await store.inputs.pending("run_1")).toEqual([]);
    const adding = store.inputs.add(input("msg_1"));
    expect(await store.inputs.pending("run_1")).toEqual([]);
    expect(await adding).toBe(true);
    expect((await store.inputs.pending("run_1")).map((i) => i.id)).toEqual(["msg_1"]);
    await store.close();
    store = openSqliteStore({ path: path() });
    expect((await store.inputs.pending("run_1")).map((i) => i.id)).toEqual(["msg_1"]);
    // Taken (with the message it becomes), then none; a later input is found again.
    await store.commitRun("run_1", [{ kind: "input.taken", inputId: "msg_1" }], []);
    expect(await store.inputs.pending("run_1")).toEqual([]);
    expect(await store.inputs.pending("run_1")).toEqual([]);
    await store.inputs.add(input("msg_2"));
    expect((await store.inputs.pending("run_1")).map((i) => i.id)).toEqual(["msg_2"]);
  });

  it("a queued run is found once its write committed, also when read while it waited in a group, and after a restart", async () => {
    expect(await store.runs.queuedIds("ses_1")).toEqual([]);
    const queued = runRecord({ id: "run_2", sessionId: "ses_1", status: "queued" });
    const creating = store.runs.create(queued, []);
    expect(await store.runs.queuedIds("ses_1")).toEqual([]);
    await creating;
    expect(await store.runs.queuedIds("ses_1")).toEqual(["run_2"]);
    await store.close();
    store = openSqliteStore({ path: path() });
    expect(await store.runs.queuedIds("ses_1")).toEqual(["run_2"]);
    await store.commitRun("run_1", [finishChange()], []);
    expect(
      await store.runs.startQueued("ses_1", new Date().toISOString(), { owner: "inst_1", ttlMs: 30_000 }),
    ).not.toBe(null);
    expect(await store.runs.queuedIds("ses_1")).toEqual([]);
    await store.runs.create(runRecord({ id: "run_3", sessionId: "ses_1", status: "queued" }), []);
    expect(await store.runs.queuedIds("ses_1")).toEqual(["run_3"]);
  });
});
