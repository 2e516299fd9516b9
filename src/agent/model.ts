import type { AgentMessage, ToolCall } from "./messages.js";

/** A tool as offered to the model: its name, description and JSON Schema. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  model?: string;
  system?: string;
  messages: AgentMessage[];
  tools: ToolSpec[];
  signal: AbortSignal;
  /** Called with each text fragment as it streams in. */
  onTextDelta?: (text: string) => void;
}

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Timings of one model request, for the step trace. */
export interface ModelTiming {
  latencyMs: number;
  firstTokenMs: number | null;
}

/** Stable codes of model failures; `retryable` says whether asking again may help. */
export type ModelErrorCode =
  | "MODEL_ABORTED"
  | "MODEL_LENGTH"
  | "MODEL_CONTENT_FILTER"
  | "MODEL_UNSUPPORTED_FINISH"
  | "MODEL_AUTH"
  | "MODEL_NOT_FOUND"
  | "MODEL_RATE_LIMITED"
  | "MODEL_UPSTREAM"
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
      toolCalls: ToolCall[];
      finishReason: string;
      usage: ModelUsage;
      timing: ModelTiming;
    }
  | {
      ok: false;
      code: ModelErrorCode;
      message: string;
      usage?: ModelUsage;
      timing: ModelTiming;
    };

export interface ModelClient {
  complete(request: ModelRequest): Promise<ModelResult>;
}
