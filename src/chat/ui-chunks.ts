import type { StopReason } from "../agent/stop-reason.js";
import type { RunEvent } from "../domain/run-events.js";
import { jsonDepth, MAX_JSON_DEPTH, nestsDeeperThan } from "../http/json-depth.js";
import type { ReplyCall } from "../store/store.js";

/**
 * The chunks of the AI SDK's UI message stream protocol (`x-vercel-ai-ui-message-stream: v1`,
 * as `ai` 7 parses them) that a run's events project to.
 */
export type UiChunk =
  | { type: "start"; messageId: string }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "reset-step" }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string }
  | { type: "tool-input-available"; toolCallId: string; toolName: string; input: unknown; dynamic: true }
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string; reason?: string; isAutomatic?: true }
  | { type: "tool-approval-response"; approvalId: string; approved: boolean; reason?: string }
  | { type: "tool-output-available"; toolCallId: string; output: unknown; dynamic: true }
  | { type: "tool-output-error"; toolCallId: string; errorText: string; dynamic: true }
  | { type: "tool-output-denied"; toolCallId: string }
  | { type: "error"; errorText: string }
  | { type: "abort"; reason?: string }
  | { type: "message-metadata"; messageMetadata: StopMetadata }
  | {
      type: "finish";
      finishReason: "stop" | "length" | "error" | "tool-calls" | "other";
      /** At the run's end (not a stop to wait for an approval): why it stopped, as its view says. */
      messageMetadata?: StopMetadata;
    };

/** Why a run stopped, as its view says: the ended run's assistant message's `metadata`. */
export interface StopMetadata {
  stopReason: StopReason | null;
  stopDetail: string | null;
}

/** The SDK's finish reason for each stop reason: a spent budget is a limit like the turn budget. */
const FINISH_REASONS: Record<StopReason, Extract<UiChunk, { type: "finish" }>["finishReason"]> = {
  complete: "stop",
  max_turns: "length",
  budget_exhausted: "length",
  loop_detected: "other",
  error: "error",
  aborted: "other",
};

/**
 * How deep a part's `input` may nest: the client posts the part back inside its message
 * (the body, its `messages`, a message, its `parts`, the part), and a body nesting deeper than
 * MAX_JSON_DEPTH is refused.
 */
const MAX_INPUT_DEPTH = MAX_JSON_DEPTH - jsonDepth(JSON.stringify({ messages: [{ parts: [{ input: null }] }] }));

/**
 * A tool call's arguments as the SDK shows them: the parsed JSON, else (they do not parse, or
 * nest deeper than MAX_INPUT_DEPTH) the raw text.
 */
function parsedInput(text: string): unknown {
  if (nestsDeeperThan(text, MAX_INPUT_DEPTH)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Projects one run's events, in order, onto one assistant UI message (its id the run's id):
 * a model turn is a step, streamed text a text part, each tool call a dynamic tool part
 * through input, approval and output. A reply's calls are asked, run and answered one at a
 * time, in order, and each call's part appears when the run reaches it (its approval request,
 * its start or its result): a part shown waiting for its input before, while an earlier call
 * waits for approval, would keep the SDK from posting that approval (it posts once every
 * call shown has an answer or a result). A turn dropped before its commit (cancelled, or asked
 * again after a restart) is reset, as the run's own history drops it. Feed every event from
 * the first (or from a call's approval request on, see `atApprovalRequest`); `next` returns the
 * chunks the event adds.
 */
export class UiMessageProjection {
  #text: string | null = null;
  #stepOpen = false;
  #committed = false;
  /** The calls of the open reply without a result yet, with their tool and argument text. */
  readonly #awaitingResult = new Map<string, { name: string; input: string }>();
  /** Of those, the ones whose part was shown. */
  readonly #shown = new Set<string>();
  /** Of those, the ones whose approval request was sent, and whether its response was too. */
  readonly #approval = new Map<string, "requested" | "responded">();

  /**
   * Takes the projection up as it stands after a call's approval request, fed every event
   * before it: the reply's step is open and committed (the reply, which proposed the call, is),
   * no text part is open, and `awaiting`, the call (shown) and the calls after it in its reply
   * (not shown yet), have no result yet. The events from the request on are then fed as from
   * the first.
   */
  atApprovalRequest(awaiting: readonly ReplyCall[]): this {
    this.#text = null;
    this.#stepOpen = true;
    this.#committed = true;
    this.#awaitingResult.clear();
    this.#shown.clear();
    this.#approval.clear();
    for (const call of awaiting) this.#awaitingResult.set(call.id, { name: call.name, input: call.input });
    if (awaiting[0]) {
      this.#shown.add(awaiting[0].id);
      this.#approval.set(awaiting[0].id, "requested");
    }
    return this;
  }

  next(event: RunEvent): UiChunk[] {
    const out: UiChunk[] = [];
    switch (event.type) {
      case "run.started":
        out.push({ type: "start", messageId: event.runId });
        break;
      case "turn.started":
        this.#closeText(out);
        if (this.#stepOpen && !this.#committed) out.push({ type: "reset-step" });
        else if (!this.#stepOpen) out.push({ type: "start-step" });
        this.#stepOpen = true;
        this.#committed = false;
        break;
      case "text.delta":
        if (this.#text === null) {
          this.#text = `${event.runId}-text-${event.seq}`;
          out.push({ type: "text-start", id: this.#text });
        }
        out.push({ type: "text-delta", id: this.#text, delta: event.text });
        break;
      case "message": {
        const message = event.message;
        if (message.role === "assistant") {
          this.#committed = true;
          if (this.#text === null && message.content !== "") {
            this.#text = `${event.runId}-text-${event.seq}`;
            out.push(
              { type: "text-start", id: this.#text },
              { type: "text-delta", id: this.#text, delta: message.content },
            );
          }
          this.#closeText(out);
          for (const call of message.toolCalls ?? []) {
            this.#awaitingResult.set(call.id, { name: call.name, input: call.input });
          }
          if (this.#awaitingResult.size === 0) this.#finishStep(out);
        } else if (message.role === "tool") {
          const id = message.toolCallId;
          this.#show(id, out);
          if (message.metadata.errorCode === "DENIED") this.#denied(id, message.content, out);
          else if (message.isError)
            out.push({ type: "tool-output-error", toolCallId: id, errorText: message.content, dynamic: true });
          else out.push({ type: "tool-output-available", toolCallId: id, output: message.content, dynamic: true });
          this.#awaitingResult.delete(id);
          this.#shown.delete(id);
          this.#approval.delete(id);
          if (this.#awaitingResult.size === 0) this.#finishStep(out);
        }
        break;
      }
      case "approval.requested":
        this.#show(event.toolCallId, out);
        this.#approval.set(event.toolCallId, "requested");
        out.push({
          type: "tool-approval-request",
          approvalId: event.toolCallId,
          toolCallId: event.toolCallId,
          reason: event.reason,
        });
        break;
      case "approval.resolved":
        this.#approval.set(event.toolCallId, "responded");
        out.push({
          type: "tool-approval-response",
          approvalId: event.toolCallId,
          approved: event.decision === "approve",
          ...(event.reason ? { reason: event.reason } : {}),
        });
        break;
      case "tool.started":
        this.#show(event.toolCallId, out);
        break;
      case "run.finished": {
        this.#closeText(out);
        if (this.#stepOpen && !this.#committed) out.push({ type: "reset-step" });
        if (this.#stepOpen) this.#finishStep(out);
        const { stopReason, stopDetail, error } = event.run;
        const messageMetadata = { stopReason, stopDetail };
        // The SDK's chat client stops reading at an `error` chunk (it throws), so the `finish`
        // after it is never read: the metadata goes before the error too.
        if (stopReason === "error") {
          out.push(
            { type: "message-metadata", messageMetadata },
            { type: "error", errorText: error?.message ?? "the run failed" },
          );
        }
        if (stopReason === "aborted") out.push({ type: "abort", reason: error?.message ?? "the run was cancelled" });
        out.push({ type: "finish", finishReason: FINISH_REASONS[stopReason ?? "error"], messageMetadata });
        break;
      }
    }
    return out;
  }

  /** Shows the part of the reply's call `id` (waiting for its input's use), once. */
  #show(id: string, out: UiChunk[]): void {
    const call = this.#awaitingResult.get(id);
    if (!call || this.#shown.has(id)) return;
    this.#shown.add(id);
    out.push({
      type: "tool-input-available",
      toolCallId: id,
      toolName: call.name,
      input: parsedInput(call.input),
      dynamic: true,
    });
  }

  /**
   * A denied call's part: `output-denied`, which the SDK's UI message schema gives an approval
   * denied. A call denied without an answer sent (the approval policy denied it: nobody was
   * asked) gets that approval here, as the SDK's own policy denials do: an automatic request,
   * then a response denying it with the result's text (the policy's reason) as its reason.
   */
  #denied(id: string, reason: string, out: UiChunk[]): void {
    const approval = this.#approval.get(id);
    if (approval === undefined)
      out.push({ type: "tool-approval-request", approvalId: id, toolCallId: id, isAutomatic: true });
    if (approval !== "responded") out.push({ type: "tool-approval-response", approvalId: id, approved: false, reason });
    out.push({ type: "tool-output-denied", toolCallId: id });
  }

  #closeText(out: UiChunk[]): void {
    if (this.#text === null) return;
    out.push({ type: "text-end", id: this.#text });
    this.#text = null;
  }

  #finishStep(out: UiChunk[]): void {
    out.push({ type: "finish-step" });
    this.#stepOpen = false;
    this.#committed = false;
  }
}
