import type { AgentMessage, ToolCall } from "../../src/agent/messages.js";
import type {
  ModelClient,
  ModelErrorCode,
  ModelRequest,
  ModelResult,
  ModelTiming,
  ModelUsage,
  ToolSpec,
} from "../../src/agent/model.js";

/** A model reply that ends cleanly (unless the signal fires while it waits on its gate). */
export interface ScriptedReply {
  text?: string;
  toolCalls?: ToolCall[];
  /** Defaults to `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Defaults to zero tokens. */
  usage?: ModelUsage;
  /**
   * The reply waits on this promise after streaming its first text fragment, as if the
   * stream were still open, so a test can act (abort) while the model "streams".
   */
  gate?: Promise<unknown>;
  /**
   * What a signal fired while the reply waits on its gate does: `"abort"` (the default,
   * like a real client) ends the request at once with `MODEL_ABORTED`; `"ignore"` lets the
   * stream end normally once the gate opens (the race in which the stream finished just
   * as the run was cancelled).
   */
  onAbort?: "abort" | "ignore";
}

/** A failed model request. */
export interface ScriptedFailure {
  error: { code: ModelErrorCode; message: string };
  usage?: ModelUsage;
  /** The failure is returned after this promise settles. */
  gate?: Promise<unknown>;
}

/** Custom behaviour: the request and its 0-based index in the script. */
export type ScriptedFunction = (request: ModelRequest, index: number) => ModelResult | Promise<ModelResult>;

export type ScriptedStep = ScriptedReply | ScriptedFailure | ScriptedFunction;

/** What the model was sent: a deep copy taken when the request arrived. */
export interface RecordedRequest {
  model: string | undefined;
  system: string | undefined;
  messages: AgentMessage[];
  tools: ToolSpec[];
  /** Whether the signal had already fired when the request arrived. */
  abortedAtStart: boolean;
}

const TIMING: ModelTiming = { latencyMs: 1, firstTokenMs: 0 };
const NO_USAGE: ModelUsage = { inputTokens: 0, outputTokens: 0 };

/** A tool call as a model sends it; an object `input` is serialised to JSON text. */
export function toolCall(id: string, name: string, input: unknown = {}): ToolCall {
  return { id, name, input: typeof input === "string" ? input : JSON.stringify(input) };
}

/** Splits text into (at most) two fragments, the way a stream delivers it. */
export function fragments(text: string): string[] {
  if (text.length < 2) return text ? [text] : [];
  const cut = Math.ceil(text.length / 2);
  return [text.slice(0, cut), text.slice(cut)];
}

function waitOrAbort(promise: Promise<unknown>, signal: AbortSignal): Promise<"open" | "aborted"> {
  if (signal.aborted) return Promise.resolve("aborted");
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve("aborted");
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve("open");
      },
      (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/**
 * A ModelClient that plays a script, one step per request, and records every request.
 * A request beyond the script gets an error result and is recorded as an overrun, so
 * `assertComplete()` fails the test.
 */
export class ScriptedModel implements ModelClient {
  readonly requests: RecordedRequest[] = [];
  /** Descriptions of requests that arrived after the script ran out. */
  readonly overruns: string[] = [];
  private readonly arrivals = new Map<
    number,
    { promise: Promise<RecordedRequest>; resolve: (r: RecordedRequest) => void }
  >();

  constructor(private readonly steps: readonly ScriptedStep[]) {}

  /** Resolves when request `index` (0-based) arrives: the model is now "streaming". */
  requestArrived(index: number): Promise<RecordedRequest> {
    return this.arrival(index).promise;
  }

  /** Throws if steps of the script were never requested or requests overran it. */
  assertComplete(): void {
    const problems: string[] = [];
    if (this.requests.length < this.steps.length) {
      problems.push(`${this.steps.length - this.requests.length} scripted step(s) were never requested`);
    }
    problems.push(...this.overruns);
    if (problems.length) throw new Error(`ScriptedModel: ${problems.join("; ")}`);
  }

  async complete(request: ModelRequest): Promise<ModelResult> {
    const index = this.requests.length;
    const recorded: RecordedRequest = {
      model: request.model,
      system: request.system,
      messages: structuredClone(request.messages),
      tools: structuredClone(request.tools),
      abortedAtStart: request.signal.aborted,
    };
    this.requests.push(recorded);
    this.arrival(index).resolve(recorded);

    const step = this.steps[index];
    if (step === undefined) {
      const message = `unexpected model request #${index + 1}: the script has ${this.steps.length} step(s)`;
      this.overruns.push(message);
      return { ok: false, code: "MODEL_BAD_RESPONSE", message: `ScriptedModel: ${message}`, timing: TIMING };
    }
    if (typeof step === "function") return step(request, index);

    if ("error" in step) {
      if (step.gate) await step.gate;
      return { ok: false, ...step.error, ...(step.usage ? { usage: step.usage } : {}), timing: TIMING };
    }

    const honourAbort = (step.onAbort ?? "abort") === "abort";
    if (honourAbort && request.signal.aborted) return this.aborted();
    const [first, ...rest] = fragments(step.text ?? "");
    if (first !== undefined) request.onTextDelta?.(first);
    if (step.gate) {
      if (!honourAbort) await step.gate;
      else if ((await waitOrAbort(step.gate, request.signal)) === "aborted") return this.aborted();
    }
    for (const fragment of rest) request.onTextDelta?.(fragment);
    const toolCalls = step.toolCalls ?? [];
    return {
      ok: true,
      text: step.text ?? "",
      toolCalls: structuredClone(toolCalls),
      finishReason: step.finishReason ?? (toolCalls.length ? "tool_calls" : "stop"),
      usage: step.usage ?? NO_USAGE,
      timing: TIMING,
    };
  }

  private aborted(): ModelResult {
    return { ok: false, code: "MODEL_ABORTED", message: "the request was cancelled", timing: TIMING };
  }

  private arrival(index: number) {
    let entry = this.arrivals.get(index);
    if (!entry) {
      let resolve!: (r: RecordedRequest) => void;
      const promise = new Promise<RecordedRequest>((res) => {
        resolve = res;
      });
      entry = { promise, resolve };
      this.arrivals.set(index, entry);
    }
    return entry;
  }
}
