/**
 * A run's and a session's numbered lists (events by seq, messages by seq, steps by turn, calls
 * awaiting approval by ordinal, webhook deliveries by event seq) read after a key past the
 * largest one stored (MAX_KEY, PostgreSQL's INTEGER) hold nothing: nothing is past it. The Store
 * takes any number there (`seq: number`), and `messages.page` already reads a key past MAX_KEY
 * as empty on both backends (its `$2::bigint`).
 *
 * SQLite answers every read below with an empty list. PostgreSQL throws a raw DatabaseError
 * (SQLSTATE 22003 "value ... is out of range for type integer", not even a StorageError): the
 * parameter is typed INTEGER after the column it is compared with.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_KEY } from "../../src/store/page.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

const PAST = MAX_KEY + 1;

describe.each(STORE_BACKENDS)("reads after a key past MAX_KEY on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  const sessionId = "ses_past_0001";
  const runId = "run_past_0001";
  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
    await seedSession(store, { id: sessionId });
    await store.runs.create(runRecord({ id: runId, sessionId }), [
      { type: "run.started", runId, seq: 1, at: new Date().toISOString() },
    ]);
  });
  afterAll(() => opened?.dispose());

  const settled = <T>(read: Promise<T>) =>
    read.then(
      (value) => ({ value }),
      (err: Error) => ({ error: `${err.name}: ${err.message}` }),
    );

  it("messages.page after it is empty (the reference: it already holds on both)", async () => {
    expect(await settled(store.messages.page({ sessionId, afterSeq: PAST, limit: 10 }))).toEqual({
      value: { items: [], nextCursor: null },
    });
  });

  it("events.after and events.afterWithin after it are empty", async () => {
    expect(await settled(store.events.after(runId, PAST))).toEqual({ value: [] });
    expect(await settled(store.events.afterWithin(runId, PAST, { limit: 10, bytes: 65_536 }))).toEqual({
      value: { events: [], more: false },
    });
  });

  it("messages.history and messages.ofRun after it are empty", async () => {
    expect(await settled(store.messages.history(sessionId, PAST))).toEqual({ value: [] });
    expect(await settled(store.messages.ofRun(sessionId, runId, PAST))).toEqual({ value: [] });
  });

  it("steps, calls awaiting approval and webhook deliveries after it are empty pages", async () => {
    const empty = { value: { items: [], nextCursor: null } };
    expect(await settled(store.steps.page({ runId, after: PAST, limit: 10 }))).toEqual(empty);
    expect(await settled(store.toolCalls.awaitingApproval({ runId, after: PAST, limit: 10 }))).toEqual(empty);
    expect(await settled(store.webhooks.page({ runId, after: PAST, limit: 10 }))).toEqual(empty);
  });
});
