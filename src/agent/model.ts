import type { AgentMessage, ToolCall } from "./messages.js";

/** A tool as offered to the model: its name, description and JSON Schema. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  model?: string;
  /** The provider profile the session names (src/model/provider-profile.ts); the client's own choice when absent. */
  providerProfile?: string | undefined;
  system?: string;
  messages: AgentMessage[];
  tools: ToolSpec[];
  /**
   * Fires when the run is cancelled or its wall-time budget is spent: the request stops, and a
   * request it stopped fails MODEL_ABORTED (any other failure is the model's own).
   */
  signal: AbortSignal;
  /** Called with each text fragment as it streams in. */
  onTextDelta?: (text: string) => void;
  /** Called with each fragment of the reasoning a provider streams beside the answer. */
  onReasoningDelta?: (text: string) => void;
}

/**
 * A proposed tool call as the model client returns it: `providerFields` are what the provider
 * sent beside the call (Gemini's `extra_content` with its thought signature), kept so they
 * can be sent back to a provider that needs them.
 */
export type ModelToolCall = ToolCall & { providerFields?: Record<string, unknown> };

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Timings of one model request, for the step trace. */
export interface ModelTiming {
  latencyMs: number;
  firstTokenMs: number | null;
}

/**
 * Stable codes of model failures. MODEL_OUT_OF_DESCRIPTORS: this server, not the upstream,
 * had no file descriptor left to connect with (EMFILE/ENFILE); asking again later may succeed.
 * MODEL_QUOTA_EXHAUSTED: the provider account is out of quota or credit (OpenAI's 429
 * `insufficient_quota`, a 402, a 400 "credit balance is too low"), which no wait or retry
 * fixes, unlike MODEL_RATE_LIMITED.
 */
export type ModelErrorCode =
  | "MODEL_ABORTED"
  | "MODEL_LENGTH"
  | "MODEL_CONTENT_FILTER"
  | "MODEL_UNSUPPORTED_FINISH"
  | "MODEL_AUTH"
  | "MODEL_NOT_FOUND"
  | "MODEL_RATE_LIMITED"
  | "MODEL_QUOTA_EXHAUSTED"
  | "MODEL_UPSTREAM"
  | "MODEL_OUT_OF_DESCRIPTORS"
  | "MODEL_TIMEOUT"
  | "MODEL_BAD_RESPONSE"
  | "MODEL_OUTPUT_TOO_LARGE"
  | "MODEL_NOT_CONFIGURED";

/**
 * The outcome of one model request. A stream that ended cleanly is `ok`; anything
 * else (including cancellation) is a value, never a throw.
 */
export type ModelResult =
  | {
      ok: true;
      text: string;
      /** Part of the text came as a refusal: the model declined. */
      refusal?: boolean;
      /** The reasoning the provider streamed beside the answer (absent or "" when none). */
      reasoning?: string;
      /** The reasoning as the provider's typed blocks (OpenRouter's `reasoning_details`), kept to be sent back. */
      reasoningDetails?: Record<string, unknown>[];
      toolCalls: ModelToolCall[];
      finishReason: string;
      usage: ModelUsage;
      timing: ModelTiming;
    }
  | {
      ok: false;
      code: ModelErrorCode;
      message: string;
      /** What to try, when the failure says better than its code (a request the upstream refused as sent). */
      hint?: string;
      /** The finish_reason the upstream ended the reply with, when it gave one (`length`, `content_filter`...). */
      finishReason?: string;
      usage?: ModelUsage;
      timing: ModelTiming;
    };

export interface ModelClient {
  complete(request: ModelRequest): Promise<ModelResult>;
  /**
   * How many characters a request for `target` (its model and session's profile) sends for a
   * message beyond its content and tool-call arguments: what the provider profile sends back
   * (OpenRouter's `reasoning_details`, Gemini's `extra_content`, DeepSeek's `reasoning_content`),
   * counted against `contextMaxChars`. Absent: nothing beyond them.
   */
  sentExtraChars?(
    target: Pick<ModelRequest, "model" | "providerProfile">,
  ): ((message: AgentMessage) => number) | undefined;
}
