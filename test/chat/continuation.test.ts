import { describe, expect, it } from "vitest";
import { callOfHead } from "../../src/chat/continuation.js";
import { type UiChunk, UiMessageProjection } from "../../src/chat/ui-chunks.js";
import type { RunEvent, RunEventBody } from "../../src/domain/run-events.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";

const runId = "run_1";

/** A run's events from bodies, numbered from 1. */
function events(bodies: RunEventBody[]): RunEvent[] {
  return bodies.map((body, i) => ({ ...body, runId, seq: i + 1, at: "2026-01-01T00:00:00.000Z" }) as RunEvent);
}

const message = (m: Partial<StoredMessage> & Pick<StoredMessage, "role">): RunEventBody => ({
  type: "message",
  message: {
    id: `msg_${Math.random()}`,
    sessionId: "ses_1",
    runId,
    seq: 1,
    createdAt: "x",
    content: "",
    ...m,
  } as StoredMessage,
});
const reply = (...ids: string[]): RunEventBody =>
  message({ role: "assistant", content: "", toolCalls: ids.map((id) => ({ id, name: "write_file", input: "{}" })) });
const result = (id: string, errorCode?: string): RunEventBody =>
  message({
    role: "tool",
    content: `done ${id}`,
    toolCallId: id,
    isError: errorCode !== undefined,
    metadata: { errorCode, retryable: false, durationMs: 1, outputChars: 4, truncated: false },
  } as Partial<StoredMessage> & Pick<StoredMessage, "role">);
const asked = (id: string): RunEventBody => ({
  type: "approval.requested",
  toolCallId: id,
  tool: "write_file",
  input: { content: "x".repeat(100) },
  reason: "write_file requires approval",
});
const decided = (id: string, decision: "approve" | "deny" = "approve"): RunEventBody => ({
  type: "approval.resolved",
  toolCallId: id,
  decision,
  reason: null,
});
const started = (id: string): RunEventBody => ({ type: "tool.started", toolCallId: id, tool: "write_file" });
const finished = { type: "run.finished", run: { stopReason: "complete", error: null } } as unknown as RunEventBody;

/** What a stream continuing after the event at `after` sends, fed every event from the first (the chunks up to it dropped, but `start`). */
function fromTheFirst(all: RunEvent[], after: number): UiChunk[] {
  const projection = new UiMessageProjection();
  return all.flatMap((event) => {
    const chunks = projection.next(event);
    if (event.seq > after) return chunks;
    return event.type === "run.started" ? chunks.filter((c) => c.type === "start") : [];
  });
}

/** The same stream taken up at the approval request `after` (the events before it not fed). */
function takenUp(all: RunEvent[], after: number, awaiting: string[]): UiChunk[] {
  const projection = new UiMessageProjection().atApprovalRequest(
    awaiting.map((id) => ({ id, name: "write_file", input: "{}" })),
  );
  return [
    { type: "start", messageId: runId },
    ...all.filter((event) => event.seq > after).flatMap((event) => projection.next(event)),
  ];
}

describe("a chat continuation taken up at an approval request", () => {
  const cases: { name: string; bodies: RunEventBody[]; at: string; awaiting: string[] }[] = [
    {
      name: "a call run without approval, then the call asked for, then a final answer",
      bodies: [
        { type: "run.started" },
        { type: "turn.started", turn: 1 },
        { type: "text.delta", text: "let me" },
        reply("call_ls", "call_w"),
        started("call_ls"),
        result("call_ls"),
        asked("call_w"),
        decided("call_w"),
        started("call_w"),
        result("call_w"),
        { type: "turn.started", turn: 2 },
        { type: "text.delta", text: "written" },
        message({ role: "assistant", content: "written" }),
        finished,
      ],
      at: "call_w",
      awaiting: ["call_w"],
    },
    {
      name: "the second of three asked calls, the first denied, then a reply asking again",
      bodies: [
        { type: "run.started" },
        { type: "turn.started", turn: 1 },
        reply("c1", "c2", "c3"),
        asked("c1"),
        decided("c1", "deny"),
        result("c1", "DENIED"),
        asked("c2"),
        decided("c2"),
        started("c2"),
        result("c2"),
        asked("c3"),
        decided("c3"),
        started("c3"),
        result("c3", "TOOL_ERROR"),
        { type: "turn.started", turn: 2 },
        reply("c4"),
        asked("c4"),
      ],
      at: "c2",
      awaiting: ["c2", "c3"],
    },
    {
      name: "calls the approval policy denies (nobody asked) before and after the call asked",
      bodies: [
        { type: "run.started" },
        { type: "turn.started", turn: 1 },
        reply("p1", "a", "p2"),
        result("p1", "DENIED"),
        asked("a"),
        decided("a"),
        started("a"),
        result("a"),
        result("p2", "DENIED"),
        { type: "turn.started", turn: 2 },
        message({ role: "assistant", content: "done" }),
        finished,
      ],
      at: "a",
      awaiting: ["a", "p2"],
    },
    {
      name: "the first call of a reply asked, the run then cancelled",
      bodies: [
        { type: "run.started" },
        { type: "turn.started", turn: 1 },
        { type: "text.delta", text: "ok" },
        reply("a", "b"),
        asked("a"),
        decided("a", "deny"),
        result("a", "DENIED"),
        result("b", "ABORTED"),
        {
          ...finished,
          run: { stopReason: "aborted", error: { code: "ABORTED", message: "cancelled" } },
        } as RunEventBody,
      ],
      at: "a",
      awaiting: ["a", "b"],
    },
  ];
  for (const { name, bodies, at, awaiting } of cases) {
    it(`sends what a stream fed every event sends: ${name}`, () => {
      const all = events(bodies);
      const after = all.find((e) => e.type === "approval.requested" && e.toolCallId === at)?.seq as number;
      const expected = fromTheFirst(all, after);
      expect(expected.length).toBeGreaterThan(3);
      expect(takenUp(all, after, awaiting)).toEqual(expected);
    });
  }
});

describe("a denied call in the projection", () => {
  /** The chunks of call `id` a stream fed `bodies` from the first sends. */
  const ofCall = (bodies: RunEventBody[], id: string): UiChunk[] => {
    const projection = new UiMessageProjection();
    return events(bodies)
      .flatMap((event) => projection.next(event))
      .filter((chunk) => ("toolCallId" in chunk ? chunk.toolCallId : "approvalId" in chunk && chunk.approvalId) === id);
  };
  const start = [{ type: "run.started" }, { type: "turn.started", turn: 1 }] as RunEventBody[];

  it("denied by the policy (nobody asked): an automatic request, denied with the result's text as its reason", () => {
    expect(ofCall([...start, reply("p"), result("p", "DENIED")], "p")).toEqual([
      { type: "tool-input-available", toolCallId: "p", toolName: "write_file", input: {}, dynamic: true },
      { type: "tool-approval-request", approvalId: "p", toolCallId: "p", isAutomatic: true },
      { type: "tool-approval-response", approvalId: "p", approved: false, reason: "done p" },
      { type: "tool-output-denied", toolCallId: "p" },
    ]);
  });

  it("denied by a person (asked, then denied): the request, the person's answer and the denial, nothing added", () => {
    const chunks = ofCall([...start, reply("a"), asked("a"), decided("a", "deny"), result("a", "DENIED")], "a");
    expect(chunks.map((chunk) => chunk.type)).toEqual([
      "tool-input-available",
      "tool-approval-request",
      "tool-approval-response",
      "tool-output-denied",
    ]);
    expect(chunks[1]).not.toHaveProperty("isAutomatic");
    expect(chunks[2]).toEqual({ type: "tool-approval-response", approvalId: "a", approved: false });
  });
});

describe("a reply's calls in the projection", () => {
  it("each call's part appears when the run reaches it, not with the reply: a later call does not wait before an approval", () => {
    const projection = new UiMessageProjection();
    const shown = (bodies: RunEventBody[], from: number) =>
      events(bodies)
        .slice(from)
        .flatMap((event) => projection.next(event))
        .filter((chunk) => chunk.type === "tool-input-available")
        .map((chunk) => (chunk as { toolCallId: string }).toolCallId);
    const bodies = [
      { type: "run.started" },
      { type: "turn.started", turn: 1 },
      reply("a", "b"),
      asked("a"),
    ] as RunEventBody[];
    expect(shown(bodies, 0)).toEqual(["a"]);
    const more = [...bodies, decided("a"), started("a"), result("a"), started("b"), result("b")];
    expect(shown(more, bodies.length)).toEqual(["b"]);
  });
});

describe("the call of an approval request, from the first characters of its JSON", () => {
  const head = (toolCallId: string) =>
    JSON.stringify({ type: "approval.requested", toolCallId, tool: "t", input: {}, reason: "r", runId, seq: 3 });

  it("is its id, whatever characters the id holds", () => {
    for (const id of ["call_1", 'a"b', "a\\", '\\"', "é✓\u0000\n", 'x","role":"user', ""]) {
      expect(callOfHead(head(id))).toBe(id);
      expect(callOfHead(head(id).slice(0, 60 + JSON.stringify(id).length))).toBe(id);
    }
  });

  it("is unknown when the characters end inside the id, or the JSON begins otherwise", () => {
    expect(callOfHead(head("call_long").slice(0, 50))).toBeUndefined();
    expect(callOfHead(head('ab\\"cd').slice(0, 47))).toBeUndefined();
    expect(callOfHead(JSON.stringify({ toolCallId: "a", type: "approval.requested" }))).toBeUndefined();
    expect(callOfHead('{"type":"approval.requested","toolCallId":null}')).toBeUndefined();
  });
});
