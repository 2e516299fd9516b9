import { randomUUID } from "node:crypto";
import type { ModelToolCall, ModelUsage } from "../agent/model.js";
import { characterBoundary } from "../utf16.js";
import {
  argumentsText,
  contentPieces,
  extraFields,
  isRecord,
  MAX_FIELD_DEPTH,
  nestsDeeperThan,
  reasoningOf,
  usageOf,
} from "./chunk-fields.js";
import { MAX_REASONING_DETAILS, type ReasoningDetail, ReasoningDetailsFold } from "./reasoning-details.js";
import { type PartialCall, ToolCallSlots } from "./tool-call-slots.js";

export interface AssembledStream {
  text: string;
  /** Part of the text came as `refusal`: the model declined. */
  refusal: boolean;
  /** Reasoning the provider streamed beside the answer ("" when none). */
  reasoning: string;
  /** The reasoning as typed blocks (OpenRouter's `reasoning_details`, folded; see reasoning-details.ts); [] when none. */
  reasoningDetails: ReasoningDetail[];
  toolCalls: ModelToolCall[];
  /** The last non-null finish_reason of choice 0; null when none arrived. */
  finishReason: string | null;
  /** The last usage seen (normally in the final chunk); null when none arrived. */
  usage: ModelUsage | null;
  /** Milliseconds from `startedAt` to the first text, reasoning or tool-call fragment; null if none. */
  firstTokenMs: number | null;
  chunkCount: number;
}

/**
 * The most tool calls one reply may make. MAX_TOOL_CALLS_PER_TURN (at most 10,000) bounds the
 * calls that run, but every call of a reply is stored with a result (the rest say
 * TOO_MANY_TOOL_CALLS), so a reply of a million one-character calls (within
 * MODEL_MAX_OUTPUT_CHARS) held the event loop for minutes and wrote a million messages. A reply
 * with more is cut off as too large, and none of it is kept.
 */
export const MAX_TOOL_CALLS_PER_REPLY = 10_000;

export type AcceptResult = { ok: true } | { ok: false; message: string; tooLarge?: true };

/**
 * Folds Chat Completions stream chunks into one turn. Only choice 0 counts. Text (`content`
 * as a string or as an array of parts, and `refusal`, which marks the turn a refusal) is
 * appended in order and passed to `onTextDelta`; reasoning (`reasoning_content`,
 * `reasoning`, thinking parts) is kept apart and passed to `onReasoningDelta`; tool calls are
 * assembled as {@link ToolCallSlots} says, with any provider fields beside them. Usage is read
 * wherever the provider puts it. Chunks are untrusted JSON: anything not shaped like a chunk
 * is reported, never thrown.
 */
export class StreamAssembler {
  private text = "";
  private refusal = false;
  private reasoning = "";
  /** A high surrogate ending the text or the reasoning, held from the deltas until its pair comes (if ever). */
  private readonly held = { text: "", reasoning: "" };
  private readonly details = new ReasoningDetailsFold();
  private readonly slots = new ToolCallSlots();
  private finishReason: string | null = null;
  private usage: ModelUsage | null = null;
  private firstTokenMs: number | null = null;
  private chunkCount = 0;
  /** Characters (UTF-16 units) of text, reasoning and tool calls received so far. */
  private outputChars = 0;

  constructor(
    private readonly options: {
      startedAt: number;
      now: () => number;
      onTextDelta?: ((text: string) => void) | undefined;
      onReasoningDelta?: ((text: string) => void) | undefined;
      /** The most characters of text, reasoning and tool calls one reply may have. */
      maxOutputChars?: number | undefined;
    },
  ) {}

  /** Characters of text, reasoning and tool calls received so far: what says the reply is progressing. */
  producedChars(): number {
    return this.outputChars;
  }

  /** Characters the reply may still have before it passes the cap (Infinity without one). */
  remainingChars(): number {
    const max = this.options.maxOutputChars;
    return max === undefined ? Number.POSITIVE_INFINITY : Math.max(0, max - this.outputChars);
  }

  accept(chunk: unknown): AcceptResult {
    this.chunkCount++;
    if (!isRecord(chunk)) return bad("the model upstream sent a stream chunk that is not a JSON object");
    const choices = chunk.choices;
    if (choices !== undefined && choices !== null && !Array.isArray(choices)) {
      return bad("the model upstream sent a stream chunk whose `choices` is not an array");
    }
    const first = Array.isArray(choices) ? choices.find((c) => isRecord(c) && (c.index ?? 0) === 0) : undefined;
    const usage = usageOf(chunk, first);
    if (usage) this.usage = usage;
    for (const choice of Array.isArray(choices) ? choices : []) {
      if (!isRecord(choice)) return bad("the model upstream sent a stream chunk with a malformed choice");
      if (choice !== first) continue;
      const result = this.acceptDelta(choice.delta);
      if (!result.ok) return result;
      if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
        this.finishReason = choice.finish_reason;
      }
    }
    return { ok: true };
  }

  private acceptDelta(delta: unknown): AcceptResult {
    if (delta === undefined || delta === null) return { ok: true };
    if (!isRecord(delta)) return bad("the model upstream sent a stream chunk whose `delta` is not an object");
    const reasoning = reasoningOf(delta);
    if (reasoning !== "" && !this.add("reasoning", reasoning)) return this.tooLarge();
    const details = this.acceptReasoningDetails(delta.reasoning_details, reasoning.length);
    if (!details.ok) return details;
    const pieces = contentPieces(delta.content);
    if (pieces === null) return bad("the model upstream sent a `content` that is neither text nor an array of parts");
    for (const piece of pieces) {
      if (!this.add(piece.kind, piece.text)) return this.tooLarge();
    }
    if (typeof delta.refusal === "string" && delta.refusal !== "") {
      if (!this.add("text", delta.refusal)) return this.tooLarge();
      this.refusal = true;
    }
    const fragments = delta.tool_calls;
    if (fragments === undefined || fragments === null) return { ok: true };
    if (!Array.isArray(fragments)) return bad("the model upstream sent `tool_calls` that is not an array");
    for (const fragment of fragments) {
      const result = this.acceptToolFragment(fragment);
      if (!result.ok) return result;
    }
    return { ok: true };
  }

  /**
   * Folds a delta's `reasoning_details` fragments in, each counted against the output cap by
   * what it adds to the blocks (see ReasoningDetailsFold.measure): its text not again as far as
   * the delta's `reasoning` (`textCounted` characters, counted already) carried it (OpenRouter
   * sends both), so a reasoning streamed a few characters a chunk costs the cap what its text
   * does. That text covers the blocks' text once, however many blocks and however long: a
   * one-character `reasoning` beside 100,000 characters of block text passed them uncounted.
   */
  private acceptReasoningDetails(fragments: unknown, textCounted: number): AcceptResult {
    if (fragments === undefined || fragments === null) return { ok: true };
    if (!Array.isArray(fragments)) return bad("the model upstream sent `reasoning_details` that is not an array");
    let reasoningLeft = textCounted;
    for (const fragment of fragments) {
      if (!isRecord(fragment)) return bad("the model upstream sent a `reasoning_details` entry that is not an object");
      if (nestsDeeperThan(fragment, MAX_FIELD_DEPTH)) {
        return bad(
          `the model upstream sent a \`reasoning_details\` entry nested more than ${MAX_FIELD_DEPTH} levels deep`,
        );
      }
      const { chars, text } = this.details.measure(fragment);
      const covered = Math.min(text, reasoningLeft);
      reasoningLeft -= covered;
      if (!this.take(chars - covered)) return this.tooLarge();
      this.markToken();
      if (!this.details.add(fragment)) {
        return {
          ok: false,
          tooLarge: true,
          message: `the model's reply carried more than ${MAX_REASONING_DETAILS} reasoning blocks; it was cut off there and none of it was kept`,
        };
      }
    }
    return { ok: true };
  }

  /** Appends `piece` to the text or the reasoning and passes it on in whole characters (see held); false past the cap. */
  private add(kind: "text" | "reasoning", piece: string): boolean {
    if (piece === "") return true;
    if (!this.take(piece.length)) return false;
    this.markToken();
    this[kind] += piece;
    // Only the piece is read (the whole text is a long concatenation, not to be flattened per delta).
    const out = this.held[kind] + piece;
    const end = characterBoundary(out, out.length);
    this.held[kind] = out.slice(end);
    if (end > 0) (kind === "text" ? this.options.onTextDelta : this.options.onReasoningDelta)?.(out.slice(0, end));
    return true;
  }

  private acceptToolFragment(fragment: unknown): AcceptResult {
    if (!isRecord(fragment)) return bad("the model upstream sent a malformed tool-call fragment");
    const fn = isRecord(fragment.function) ? fragment.function : {};
    const id = typeof fragment.id === "string" ? fragment.id : "";
    const rawIndex = fragment.index;
    if (rawIndex !== undefined && rawIndex !== null && !(Number.isInteger(rawIndex) && (rawIndex as number) >= 0)) {
      return bad("the model upstream sent a tool-call fragment with an invalid `index`");
    }
    const index = typeof rawIndex === "number" ? rawIndex : undefined;
    const fnName = typeof fn.name === "string" ? fn.name : "";
    const call = this.slots.callFor({ index, id, name: fnName });
    if (this.slots.calls.length > MAX_TOOL_CALLS_PER_REPLY) {
      return {
        ok: false,
        tooLarge: true,
        message: `the model's reply made more than ${MAX_TOOL_CALLS_PER_REPLY} tool calls; it was cut off there and none of it was kept`,
      };
    }
    this.markToken();
    const name = call.name === "" ? fnName : "";
    const args = argumentsText(fn.arguments);
    const extras = extraFields(fragment);
    if (args === null || (extras && nestsDeeperThan(extras, MAX_FIELD_DEPTH))) {
      return bad(`the model upstream sent a tool-call field nested more than ${MAX_FIELD_DEPTH} levels deep`);
    }
    const extrasChars = extras ? JSON.stringify(extras).length : 0;
    if (!this.take(id.length + name.length + args.length + extrasChars)) return this.tooLarge();
    if (call.id === "" && id !== "") call.id = id;
    if (name !== "") call.name = name;
    call.input += args;
    // Merged in place: copying the fields merged so far on each fragment was quadratic (a reply
    // of 10,000 fragments, each with a field of its own, held the event loop for ~60 s).
    if (extras) {
      call.extras ??= {};
      Object.assign(call.extras, extras);
    }
    return { ok: true };
  }

  /** Counts `chars` more of the reply; false (counting nothing) when that would pass the cap. */
  private take(chars: number): boolean {
    if (chars > this.remainingChars()) return false;
    this.outputChars += chars;
    return true;
  }

  private tooLarge(): AcceptResult {
    return { ok: false, tooLarge: true, message: tooLargeMessage(this.options.maxOutputChars) };
  }

  private markToken(): void {
    if (this.firstTokenMs === null) this.firstTokenMs = this.options.now() - this.options.startedAt;
  }

  /**
   * The assembled turn, tool calls in the order they began. A call without a name is a bad
   * response; a call without an id (some OpenAI-compatible servers omit it) gets a
   * generated one, since the id only links the call to its result.
   */
  finish(): { ok: true; value: AssembledStream } | { ok: false; message: string } {
    const toolCalls: ModelToolCall[] = [];
    for (const [position, call] of this.slots.calls.entries()) {
      if (call.name === "") return bad(`the model upstream sent tool call #${position} without a function name`);
      toolCalls.push(toModelCall(call));
    }
    return {
      ok: true,
      value: {
        text: this.text,
        refusal: this.refusal,
        reasoning: this.reasoning,
        reasoningDetails: [...this.details.blocks],
        toolCalls,
        finishReason: this.finishReason,
        usage: this.usage,
        firstTokenMs: this.firstTokenMs,
        chunkCount: this.chunkCount,
      },
    };
  }

  /** Whether a finish_reason arrived for choice 0: the upstream said the reply is whole. */
  sawFinishReason(): boolean {
    return this.finishReason !== null;
  }

  /** Usage seen so far (for failure results). */
  usageSoFar(): ModelUsage | null {
    return this.usage;
  }

  /** First-token time so far (for failure results). */
  firstTokenSoFar(): number | null {
    return this.firstTokenMs;
  }
}

/** Why a reply was cut off at the output cap. */
export function tooLargeMessage(maxOutputChars: number | undefined): string {
  return `the model's reply passed ${maxOutputChars} characters of text, reasoning and tool calls (MODEL_MAX_OUTPUT_CHARS); it was cut off there and none of it was kept`;
}

function toModelCall(call: PartialCall): ModelToolCall {
  const id = call.id || `call_${randomUUID().replaceAll("-", "")}`;
  return call.extras
    ? { id, name: call.name, input: call.input, providerFields: call.extras }
    : { id, name: call.name, input: call.input };
}

function bad(message: string): { ok: false; message: string } {
  return { ok: false, message };
}
