import type { ModelUsage } from "./model.js";

/** One tool call's outcome in a step trace. */
export interface ToolTrace {
  toolCallId: string;
  tool: string;
  /** The call's fingerprint (tool name and canonical arguments, hashed): equal for repeats the loop guard counts. */
  fingerprint: string;
  status: "ok" | "error";
  errorCode: string | null;
  durationMs: number;
  outputChars: number;
  truncated: boolean;
}

/** What one turn of the loop did: what it sent, how the model answered, what the tools did. */
export interface StepTrace {
  turn: number;
  context: {
    messageCount: number;
    estimatedTokens: number;
    trimmedCount: number;
    /** The workspace files whose content was sent (read_file / search_files results inside the window). */
    includedFiles: string[];
  };
  model: {
    latencyMs: number;
    firstTokenMs: number | null;
    /** The upstream's finish_reason, also on a failed turn it ended (`length`); null when it gave none. */
    finishReason: string | null;
    usage: ModelUsage | null;
    error: string | null;
  };
  tools: ToolTrace[];
}

/** A rough token estimate (4 characters a token), enough to watch context growth. */
export const estimateTokens = (chars: number): number => Math.ceil(chars / 4);
