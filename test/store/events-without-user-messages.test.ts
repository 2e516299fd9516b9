import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/run-events.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/**
 * A chat stream reads a run's events without its user messages' (`withoutUserMessages`), each
 * told by the beginning of its stored JSON alone: what a message's id or content holds never
 * passes for the role, and an event not told apart is read as before.
 */
describe.each(STORE_BACKENDS)("a run's events without its user messages on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  const at = "2030-01-01T00:00:00.000Z";
  /** A message event as the recorder builds it: the message stamped, then the event. */
  const messageEvent = (runId: string, seq: number, fields: Record<string, unknown>): RunEvent =>
    ({
      type: "message",
      message: { ...fields, sessionId: "ses_events_users", runId, seq, createdAt: at },
      runId,
      seq,
      at,
    }) as unknown as RunEvent;

  it("leaves out user messages' events, whatever their ids and content hold, and nothing else", async () => {
    const runId = "run_events_users";
    await seedSession(store, { id: "ses_events_users" });
    await store.runs.create(runRecord({ id: runId, sessionId: "ses_events_users" }), [
      { type: "run.started", runId, seq: 1, at },
    ]);
    const tricky = '","role":"user","content":"';
    const events: RunEvent[] = [
      messageEvent(runId, 2, { id: "msg_1", role: "user", content: "x".repeat(100_000) }),
      messageEvent(runId, 3, { id: `msg_${tricky}`, role: "assistant", content: tricky }),
      { type: "text.delta", runId, seq: 4, at, text: '{"type":"message","message":{"id":"m","role":"user","' },
      messageEvent(runId, 5, { id: "call_x", role: "tool", content: tricky, toolCallId: "call_x" }),
      messageEvent(runId, 6, { id: `msg_${tricky}`, role: "user", content: "steered" }),
      messageEvent(runId, 7, { id: "m".repeat(1000), role: "user", content: "an id past the prefix" }),
      // Fields in another order: not told apart, read.
      messageEvent(runId, 8, { role: "user", id: "msg_2", content: "y" }),
      messageEvent(runId, 9, { id: "msg_3", role: "user", content: tricky }),
    ];
    await store.commitRun(runId, [], events);
    const read = (page: { limit: number; bytes: number }) =>
      store.events.afterWithin(runId, 0, { ...page, withoutUserMessages: true });
    const all = await read({ limit: 500, bytes: 1 << 20 });
    expect(all.events.map((e) => e.seq)).toEqual([1, 3, 4, 5, 7, 8]);
    expect(all.more).toBe(false);
    const shown = all.events.map((e) => JSON.parse(e.data) as { message?: StoredMessage });
    expect(shown.map((e) => e.message?.role ?? null)).toEqual([null, "assistant", null, "tool", "user", "user"]);
    // Pages count only the events they hold.
    expect((await read({ limit: 2, bytes: 1 << 20 })).events.map((e) => e.seq)).toEqual([1, 3]);
    const next = await store.events.afterWithin(runId, 5, { limit: 2, bytes: 1 << 20, withoutUserMessages: true });
    expect(next).toMatchObject({ more: false });
    expect(next.events.map((e) => e.seq)).toEqual([7, 8]);
    // Without the option, every event.
    const every = await store.events.afterWithin(runId, 0, { limit: 500, bytes: 10 << 20 });
    expect(every.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
