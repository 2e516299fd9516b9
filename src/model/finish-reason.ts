import type { ModelFailure } from "./classify-error.js";

/**
 * Whether a stream's finish_reason ends the turn cleanly. Only `stop` and `tool_calls`
 * do (the tool calls themselves are taken from the stream either way); everything
 * else, including the legacy `function_call` and a stream that ended without any
 * finish_reason (null: the caller found neither a finish_reason nor `[DONE]`), is a failure
 * the run reports. An unknown finish_reason is the upstream's text, of any length: the message
 * quotes it as `quote` makes it safe to show (redactDetail: the server's secrets redacted, the
 * length capped).
 */
export function checkFinishReason({
  reason,
  quote,
}: {
  reason: string | null;
  quote: (upstreamText: string) => string;
}): ModelFailure | null {
  switch (reason) {
    case "stop":
    case "tool_calls":
      return null;
    case "length":
      return { code: "MODEL_LENGTH", message: "model output reached the token limit" };
    case "content_filter":
      return { code: "MODEL_CONTENT_FILTER", message: "the upstream's content filter stopped the model output" };
    case null:
      return {
        code: "MODEL_UNSUPPORTED_FINISH",
        message: "the model stream ended without a finish_reason or [DONE] (the upstream closed it early)",
      };
    default:
      return { code: "MODEL_UNSUPPORTED_FINISH", message: `unsupported finish_reason: ${quote(reason)}` };
  }
}
