import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { finishChange, runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/**
 * Store.sessions.delete: a run inserted after its session's delete "meets the deleted session
 * (its insert refused, `session_gone`)", whatever else the create checks. Before, each backend
 * refused one such create with another rule: PostgreSQL's queue-free check found no session row
 * and called it a held queue (`active_run`); SQLite withdrew the steered input first, which the
 * session's delete had cascaded away (`input_taken`). Both now refuse `session_gone`.
 */
describe.each(STORE_BACKENDS)("runs.create for a deleted session on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let n = 0;
  const fresh = (prefix: string) => `${prefix}_${String(++n).padStart(4, "0")}`;
  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  /** The rule a create was refused with, or "created". */
  const ruleOf = (created: Promise<unknown>) =>
    created.then(
      () => "created",
      (err: { rule?: string; message?: string }) => err.rule ?? `not a conflict: ${err.message}`,
    );

  it("an enqueue or steer start (unlessQueueHeld) is refused session_gone", async () => {
    const sessionId = fresh("ses");
    await seedSession(store, { id: sessionId });
    expect(await store.sessions.delete(sessionId)).toBe(true);
    const rule = await ruleOf(
      store.runs.create(runRecord({ id: fresh("run"), sessionId }), [], { unlessQueueHeld: true }),
    );
    expect(rule).toBe("session_gone");
  });

  it("a start taking a steered input of the session is refused session_gone", async () => {
    const sessionId = fresh("ses");
    await seedSession(store, { id: sessionId });
    const live = fresh("run");
    await store.runs.create(runRecord({ id: live, sessionId }), []);
    const inputId = fresh("msg");
    const added = await store.inputs.add({
      id: inputId,
      runId: live,
      content: "more",
      createdAt: new Date().toISOString(),
    });
    expect(added).toBe(true);
    await store.commitRun(live, [finishChange()], []);
    expect(await store.sessions.delete(sessionId)).toBe(true);
    const rule = await ruleOf(
      store.runs.create(runRecord({ id: fresh("run"), sessionId, status: "queued" }), [], { takesInput: inputId }),
    );
    expect(rule).toBe("session_gone");
  });
});
