import { randomUUID } from "node:crypto";
import type { ToolCall } from "../agent/messages.js";
import type { ModelUsage } from "../agent/model.js";

/** A tool call being assembled from its fragments. */
interface PartialCall {
  id: string;
  name: string;
  input: string;
}

export interface AssembledStream {
  text: string;
  toolCalls: ToolCall[];
  /** The last non-null finish_reason of choice 0; null when none arrived. */
  finishReason: string | null;
  /** The last usage object seen (normally the final `choices: []` chunk); null when none arrived. */
  usage: ModelUsage | null;
  /** Milliseconds from `startedAt` to the first text or tool-call fragment; null if none. */
  firstTokenMs: number | null;
  chunkCount: number;
}

export type AcceptResult = { ok: true } | { ok: false; message: string; tooLarge?: true };

/**
 * Folds Chat Completions stream chunks into one turn. Only choice 0 counts. Text
 * (`content`, and `refusal`, which is text the user should see) is appended and passed
 * to `onTextDelta` as it arrives; tool calls are assembled by `index` (id and name from
 * the first fragment that has them, arguments concatenated across chunks). Chunks are
 * untrusted JSON: anything not shaped like a chunk is reported, never thrown.
 */
export class StreamAssembler {
  private text = "";
  private readonly calls = new Map<number, PartialCall>();
  private lastCallIndex: number | null = null;
  private finishReason: string | null = null;
  private usage: ModelUsage | null = null;
  private firstTokenMs: number | null = null;
  private chunkCount = 0;
  /** Characters (UTF-16 units) of text and tool calls (ids, names, arguments) received so far. */
  private outputChars = 0;

  constructor(
    private readonly options: {
      startedAt: number;
      now: () => number;
      onTextDelta?: ((text: string) => void) | undefined;
      /** The most characters of text and tool-call arguments one reply may have. */
      maxOutputChars?: number | undefined;
    },
  ) {}

  accept(chunk: unknown): AcceptResult {
    this.chunkCount++;
    if (!isRecord(chunk)) return bad("the model upstream sent a stream chunk that is not a JSON object");
    const usage = readUsage(chunk.usage);
    if (usage) this.usage = usage;
    const choices = chunk.choices;
    if (choices === undefined || choices === null) return { ok: true };
    if (!Array.isArray(choices)) return bad("the model upstream sent a stream chunk whose `choices` is not an array");
    for (const choice of choices) {
      if (!isRecord(choice)) return bad("the model upstream sent a stream chunk with a malformed choice");
      if (choice.index !== undefined && choice.index !== 0) continue;
      const result = this.acceptDelta(choice.delta);
      if (!result.ok) return result;
      if (typeof choice.finish_reason === "string") this.finishReason = choice.finish_reason;
    }
    return { ok: true };
  }

  private acceptDelta(delta: unknown): AcceptResult {
    if (delta === undefined || delta === null) return { ok: true };
    if (!isRecord(delta)) return bad("the model upstream sent a stream chunk whose `delta` is not an object");
    for (const field of ["content", "refusal"] as const) {
      const piece = delta[field];
      if (typeof piece === "string" && piece !== "") {
        if (!this.take(piece.length)) return this.tooLarge();
        this.markToken();
        this.text += piece;
        this.options.onTextDelta?.(piece);
      }
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

  private acceptToolFragment(fragment: unknown): AcceptResult {
    if (!isRecord(fragment)) return bad("the model upstream sent a malformed tool-call fragment");
    const fn = isRecord(fragment.function) ? fragment.function : {};
    const id = typeof fragment.id === "string" ? fragment.id : "";
    let index: number;
    if (typeof fragment.index === "number" && Number.isInteger(fragment.index) && fragment.index >= 0) {
      index = fragment.index;
    } else if (fragment.index === undefined) {
      // Lenient upstreams omit `index`: a fragment with a new id starts a call, others continue the last one.
      const last = this.lastCallIndex;
      const continues = last !== null && (id === "" || this.calls.get(last)?.id === id);
      index = continues ? last : this.calls.size === 0 ? 0 : Math.max(...this.calls.keys()) + 1;
    } else {
      return bad("the model upstream sent a tool-call fragment with an invalid `index`");
    }
    this.markToken();
    let call = this.calls.get(index);
    if (!call) {
      call = { id: "", name: "", input: "" };
      this.calls.set(index, call);
    }
    this.lastCallIndex = index;
    const name = call.name === "" && typeof fn.name === "string" ? fn.name : "";
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    if (!this.take(id.length + name.length + args.length)) return this.tooLarge();
    if (call.id === "" && id !== "") call.id = id;
    if (name !== "") call.name = name;
    call.input += args;
    return { ok: true };
  }

  /** Counts `chars` more of the reply; false (counting nothing) when that would pass the cap. */
  private take(chars: number): boolean {
    const max = this.options.maxOutputChars;
    if (max !== undefined && this.outputChars + chars > max) return false;
    this.outputChars += chars;
    return true;
  }

  private tooLarge(): AcceptResult {
    return {
      ok: false,
      tooLarge: true,
      message: `the model's reply passed ${this.options.maxOutputChars} characters of text and tool calls (MODEL_MAX_OUTPUT_CHARS); it was cut off there and none of it was kept`,
    };
  }

  private markToken(): void {
    if (this.firstTokenMs === null) this.firstTokenMs = this.options.now() - this.options.startedAt;
  }

  /**
   * The assembled turn. Tool calls come in `index` order. A call without a name is a bad
   * response; a call without an id (some OpenAI-compatible servers omit it) gets a
   * generated one, since the id only links the call to its result.
   */
  finish(): { ok: true; value: AssembledStream } | { ok: false; message: string } {
    const toolCalls: ToolCall[] = [];
    for (const [index, call] of [...this.calls.entries()].sort(([a], [b]) => a - b)) {
      if (call.name === "") return bad(`the model upstream sent tool call #${index} without a function name`);
      toolCalls.push({ id: call.id || `call_${randomUUID().replaceAll("-", "")}`, name: call.name, input: call.input });
    }
    return {
      ok: true,
      value: {
        text: this.text,
        toolCalls,
        finishReason: this.finishReason,
        usage: this.usage,
        firstTokenMs: this.firstTokenMs,
        chunkCount: this.chunkCount,
      },
    };
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

function bad(message: string): { ok: false; message: string } {
  return { ok: false, message };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readUsage(raw: unknown): ModelUsage | null {
  if (!isRecord(raw)) return null;
  const input = raw.prompt_tokens;
  const output = raw.completion_tokens;
  if (typeof input !== "number" || typeof output !== "number") return null;
  return { inputTokens: input, outputTokens: output };
}
