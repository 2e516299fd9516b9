import { describe, expect, it } from "vitest";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { HistoryTail } from "../../src/runs/history-tail.js";
import type { Store } from "../../src/store/store.js";

const msg = (seq: number, content: string): StoredMessage => ({
  id: `msg_${seq}_${content}`,
  role: "user",
  content,
  sessionId: "ses_x",
  runId: "run_x",
  seq,
  createdAt: "2025-01-01T00:00:00.000Z",
});

/**
 * forget() is how a DELETE (also one that failed part way over SQLite, deleting the newest
 * runs' messages, whose seqs the next run then reuses) drops what is kept of a session. A read
 * in flight across it put the forgotten entry back: it built on the entry it had seen before its
 * await, so deleted messages were sent again and new ones under reused seqs were missed. Such a
 * read now reads again, and neither keeps nor returns what was forgotten.
 */
describe("HistoryTail.forget during a read in flight", () => {
  it("is not undone: that read and the next return what the store holds, not messages deleted before forget", async () => {
    // The store's rows, changed by hand as deletes and commits would.
    let rows: StoredMessage[] = [msg(1, "first"), msg(2, "SECRET")];
    let release: (() => void) | null = null;
    let held = false;
    const store = {
      messages: {
        history: async (_id: string, after = 0) => {
          const found = rows.filter((m) => m.seq > after);
          if (!held && after > 0) {
            held = true;
            await new Promise<void>((resolve) => {
              release = resolve;
            });
          }
          return found;
        },
      },
    } as unknown as Pick<Store, "messages">;
    const tail = new HistoryTail(store);
    await tail.read("ses_x"); // kept: seqs 1-2
    const inFlight = tail.read("ses_x"); // peeks the entry (lastSeq 2), then waits on the store
    expect(release).not.toBeNull();
    // A DELETE removed the newest run's messages (seq 2) and then forgot the session.
    rows = [msg(1, "first")];
    tail.forget("ses_x");
    (release as unknown as () => void)();
    expect((await inFlight).messages.map((m) => m.content)).toEqual(["first"]);
    // The next run commits its input under the seq the store now gives it (last seq + 1 = 2).
    rows = [msg(1, "first"), msg(2, "next input")];
    const next = await tail.read("ses_x");
    expect(next.messages.map((m) => m.content)).toEqual(["first", "next input"]);
  });
});
