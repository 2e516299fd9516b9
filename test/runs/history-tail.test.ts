import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { toAgentMessage } from "../../src/domain/stored-message.js";
import { HistoryTail } from "../../src/runs/history-tail.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

describe("the history tail: a run reads only the messages committed since the last read", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: Store;
  /** Every history read that reached the store: its resume point and how many messages it returned. */
  let reads: { afterSeq: number; returned: number }[];
  let observed: Store;
  let seq = 0;

  beforeEach(() => {
    dir = tempDir("history-tail-");
    store = openSqliteStore({ path: join(dir.path, "agent.db") });
    reads = [];
    observed = {
      ...store,
      messages: {
        ...store.messages,
        history: async (sessionId, afterSeq = 0) => {
          const found = await store.messages.history(sessionId, afterSeq);
          reads.push({ afterSeq, returned: found.length });
          return found;
        },
      },
    };
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  async function session(id: string): Promise<string> {
    await seedSession(store, { id });
    await store.runs.create(runRecord({ id: `run_${id}`, sessionId: id }), []);
    return id;
  }
  /** Commits `n` messages of `chars` characters to the session (as another writer would). */
  async function commit(sessionId: string, n: number, chars = 10): Promise<void> {
    const messages: StoredMessage[] = Array.from({ length: n }, () => ({
      id: `msg_${++seq}`,
      role: "user",
      content: "x".repeat(chars),
      sessionId,
      runId: `run_${sessionId}`,
      seq: 0,
      createdAt: new Date().toISOString(),
    }));
    const last = await store.messages.lastSeq(sessionId);
    messages.forEach((m, i) => {
      m.seq = last + i + 1;
    });
    await store.commitRun(
      `run_${sessionId}`,
      messages.map((message) => ({ kind: "message" as const, message })),
      [],
    );
  }

  it("reads the whole history once, then only what was committed after it, and always returns all of it in order", async () => {
    const tail = new HistoryTail(observed);
    const id = await session("ses_a");
    await commit(id, 500);
    const first = await tail.read(id);
    expect(first.stored.map((m) => m.seq)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    await commit(id, 3);
    const second = await tail.read(id);
    const third = await tail.read(id);
    expect(reads).toEqual([
      { afterSeq: 0, returned: 500 },
      { afterSeq: 500, returned: 3 },
      { afterSeq: 503, returned: 0 },
    ]);
    const whole = await store.messages.history(id);
    expect(second.stored).toEqual(whole);
    expect(third.messages).toEqual(whole.map(toAgentMessage));
    // What an earlier run was given is not changed by a later read.
    expect(first.stored).toHaveLength(500);
  });

  it("keeps at most maxChars: the sessions read least recently are dropped first, a history over the bound is not kept", async () => {
    const tail = new HistoryTail(observed, 20_000);
    const [a, b, c] = [await session("ses_1"), await session("ses_2"), await session("ses_3")];
    for (const id of [a, b, c]) await commit(id, 10, 100);
    await tail.read(a);
    await tail.read(b);
    await tail.read(a);
    // 10 messages counted ~840 each (their text twice, and what holds them): two sessions fit, a third pushes out the one read least recently (b).
    await tail.read(c);
    expect(tail.size.sessions).toBe(2);
    expect(tail.size.chars).toBeLessThanOrEqual(20_000);
    reads = [];
    await tail.read(a);
    await tail.read(b);
    expect(reads).toEqual([
      { afterSeq: 10, returned: 0 },
      { afterSeq: 0, returned: 10 },
    ]);
    const big = await session("ses_big");
    await commit(big, 40, 100);
    await tail.read(big);
    reads = [];
    await tail.read(big);
    expect(reads).toEqual([{ afterSeq: 0, returned: 40 }]);
  });

  it("counts what a kept session and its messages take besides their text: many small sessions stay within the bound's memory", async () => {
    // A server whose sessions each hold one short message: 1 MB keeps fewer than a thousand of
    // them (each takes about a kilobyte of memory kept), not every one of the 5,000 read.
    const tiny = { messages: { history: async (sessionId: string) => [storedMessage(sessionId, "hi")] } };
    const tail = new HistoryTail(tiny as unknown as Pick<Store, "messages">, 1_000_000);
    for (let i = 0; i < 5_000; i++) await tail.read(`ses_${i}`);
    expect(tail.size.sessions).toBeGreaterThan(500);
    expect(tail.size.sessions).toBeLessThanOrEqual(1_000);
    expect(tail.size.chars).toBeLessThanOrEqual(1_000_000);
  });

  it("forgets a deleted session", async () => {
    const tail = new HistoryTail(observed);
    const id = await session("ses_gone");
    await commit(id, 2);
    await tail.read(id);
    tail.forget(id);
    expect(tail.size).toEqual({ sessions: 0, chars: 0 });
  });
});

/** A session's first message, as stored. */
function storedMessage(sessionId: string, content: string): StoredMessage {
  return {
    id: `msg_${sessionId}`,
    role: "user",
    content,
    sessionId,
    runId: `run_${sessionId}`,
    seq: 1,
    createdAt: new Date().toISOString(),
  };
}
