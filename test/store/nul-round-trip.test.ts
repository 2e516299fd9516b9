import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyStats } from "../../src/agent/stats.js";
import type { StepTrace } from "../../src/agent/step-trace.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import type { Store } from "../../src/store/store.js";
import { allDeliveries, allSteps } from "../helpers/run-lists.js";
import { runRecord, seedDeliveries, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** Text PostgreSQL cannot hold as is: U+0000 inside, and at the ends; and one starting with U+FFFF (the pg store's mark). */
const NUL = "a\u0000b";
const EDGES = "\u0000 both ends \u0000";
const MARKED = '\uFFFF"not encoded"';

/**
 * Every kind of text the store keeps, holding U+0000 (which PostgreSQL refuses in text and in
 * jsonb), comes back exactly as it was given, on every backend.
 */
describe.each(STORE_BACKENDS)("text with U+0000 through the store on $name", (backend) => {
  let opened: OpenedBackend;
  let store: Store;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}_${String(++counter).padStart(4, "0")}`;
  const at = () => new Date().toISOString();

  beforeAll(async () => {
    opened = await backend.open();
    store = opened.store;
  });
  afterAll(() => opened?.dispose());

  async function liveRun(input = "hi"): Promise<{ sessionId: string; runId: string }> {
    const sessionId = fresh("ses");
    const runId = fresh("run");
    await seedSession(store, { id: sessionId });
    await store.runs.create(runRecord({ id: runId, sessionId, input }), [
      { type: "run.started", runId, seq: 1, at: at() },
    ]);
    return { sessionId, runId };
  }

  it("a session's system prompt, model and metadata come back as given, also listed", async () => {
    const id = fresh("ses");
    const session = await seedSession(store, {
      id,
      system: `system ${NUL}`,
      model: MARKED,
      metadata: { note: EDGES, [NUL]: [MARKED] },
    });
    expect(await store.sessions.get(id)).toEqual(session);
    const page = await store.sessions.list({ owner: null, limit: 100, cursor: null });
    expect(page.items.find((s) => s.id === id)).toEqual(session);
  });

  it("a run's input and idempotency key come back as given, and the key finds the run", async () => {
    const sessionId = fresh("ses");
    await seedSession(store, { id: sessionId });
    const run = runRecord({ id: fresh("run"), sessionId, input: EDGES, idempotencyKey: `key ${NUL}` });
    await store.runs.create(run, []);
    expect(await store.runs.get(run.id)).toEqual(run);
    expect(await store.runs.keyed(sessionId, `key ${NUL}`, EDGES)).toMatchObject({ id: run.id, sameInput: true });
    expect(await store.runs.keyed(sessionId, `key ${NUL}`, `${EDGES} `)).toMatchObject({ sameInput: false });
    expect(await store.runs.keyed(sessionId, "key a", EDGES)).toBeNull();
    expect(await store.runs.inputHolds(run.id, EDGES)).toEqual({ sessionId, same: true });
    expect(await store.runs.inputHolds(run.id, `${EDGES} `)).toEqual({ sessionId, same: false });
    expect((await store.runs.list({ sessionId, limit: 10, cursor: null })).items).toEqual([run]);
  });

  it("messages, their tool calls and metadata come back as given; the calls enter the ledger as given", async () => {
    const { sessionId, runId } = await liveRun();
    const base = { sessionId, runId, createdAt: at() };
    const messages: StoredMessage[] = [
      { ...base, id: fresh("msg"), seq: 1, role: "user", content: NUL },
      {
        ...base,
        id: fresh("msg"),
        seq: 2,
        role: "assistant",
        content: EDGES,
        toolCalls: [{ id: `call ${NUL}`, name: `tool${NUL}`, input: `{"path":"${NUL}"}` }],
        metadata: { reasoning: NUL },
      },
      {
        ...base,
        id: fresh("msg"),
        seq: 3,
        role: "tool",
        content: `${"x".repeat(9000)}${NUL}`,
        toolCallId: `call ${NUL}`,
        isError: false,
        metadata: { errorCode: NUL, retryable: false, durationMs: 1, outputChars: 9003, truncated: false },
      },
      { ...base, id: fresh("msg"), seq: 4, role: "assistant", content: MARKED },
    ];
    await store.commitRun(
      runId,
      messages.map((message) => ({ kind: "message", message })),
      [],
    );
    expect(await store.messages.history(sessionId)).toEqual(messages);
    expect(await store.messages.ofRun(sessionId, runId)).toEqual(messages);
    expect((await store.messages.page({ sessionId, afterSeq: 0, limit: 10 })).items).toEqual(messages);
    const first = messages[0] as StoredMessage;
    expect(await store.messages.userMessageHolds(sessionId, first.id, first.content)).toEqual({ runId, same: true });
    expect(await store.messages.userMessageHolds(sessionId, first.id, "\u0001")).toEqual({ runId, same: false });
    expect(await store.messages.finalAnswer(sessionId, runId)).toBe(MARKED);
    const call = await store.toolCalls.get(runId, `call ${NUL}`);
    expect(call).toMatchObject({ name: `tool${NUL}`, input: `{"path":"${NUL}"}`, state: "finished" });
    expect(call?.resultMessageId).toBe(messages[2]?.id);
  });

  it("a call's approval and decision reasons come back as given", async () => {
    const { sessionId, runId } = await liveRun();
    const toolCallId = `call ${NUL}`;
    const proposal: StoredMessage = {
      sessionId,
      runId,
      createdAt: at(),
      id: fresh("msg"),
      seq: 1,
      role: "assistant",
      content: "",
      toolCalls: [{ id: toolCallId, name: "shell", input: "{}" }],
    };
    await store.commitRun(
      runId,
      [
        { kind: "message", message: proposal },
        { kind: "toolCall.awaitingApproval", toolCallId, reason: `asks ${NUL}`, at: at() },
      ],
      [],
    );
    await store.commitRequest(runId, [
      { kind: "toolCall.decided", toolCallId, decision: "deny", reason: EDGES, at: at() },
    ]);
    expect(await store.toolCalls.get(runId, toolCallId)).toMatchObject({
      state: "denied",
      approvalReason: `asks ${NUL}`,
      decisionReason: EDGES,
    });
  });

  it("events, steps, stats and a run's end come back as given", async () => {
    const { runId } = await liveRun();
    const step: StepTrace = {
      turn: 1,
      context: { messageCount: 1, estimatedTokens: 1, trimmedCount: 0, includedFiles: [NUL] },
      model: { latencyMs: 1, firstTokenMs: null, finishReason: EDGES, usage: null, error: MARKED },
      tools: [],
    };
    const stored = await store.commitRun(
      runId,
      [{ kind: "step", step }],
      [{ type: "text.delta", text: NUL, runId, seq: 2, at: at() }],
    );
    expect(await store.events.after(runId, 1)).toEqual(stored);
    expect(JSON.parse((await store.events.ofType(runId, "text.delta"))[0]?.data as string).text).toBe(NUL);
    expect(await allSteps(store, runId)).toEqual([step]);
    const finishedAt = at();
    await store.commitRun(
      runId,
      [
        {
          kind: "finish",
          stopReason: "error",
          stopDetail: NUL,
          error: { code: "TOOL_FAILED", message: EDGES },
          stats: emptyStats(),
          finishedAt,
        },
      ],
      [],
    );
    expect(await store.runs.get(runId)).toMatchObject({
      status: "finished",
      stopDetail: NUL,
      error: { code: "TOOL_FAILED", message: EDGES },
      finishedAt,
    });
  });

  it("steered input comes back as given", async () => {
    const { runId } = await liveRun();
    const input = { id: fresh("msg"), runId, content: EDGES, createdAt: at() };
    expect(await store.inputs.add(input)).toBe(true);
    expect(await store.inputs.pending(runId)).toEqual([input]);
  });

  it("a webhook attempt's error comes back as given", async () => {
    const [seeded] = await seedDeliveries(store, { owner: null, count: 1 });
    const id = seeded?.deliveryId as string;
    const first = { at: at(), statusCode: null, error: NUL };
    const second = { at: at(), statusCode: 500, error: EDGES };
    await store.webhooks.record({ id, attempt: first, next: { status: "pending", at: Date.now() } });
    await store.webhooks.record({ id, attempt: second, next: { status: "failed", reason: MARKED } });
    const [delivery] = await allDeliveries(store, seeded?.runId as string);
    expect(delivery?.attempts).toEqual([first, second]);
    expect(delivery).toMatchObject({ status: "failed", reason: MARKED });
  });
});
