/**
 * What the upstream's code, type or message says when the conversation is longer than the
 * model takes (OpenAI, Groq: `context_length_exceeded`; vLLM, DeepSeek, OpenRouter: "maximum
 * context length"; Anthropic: "prompt is too long"; llama.cpp: `exceed_context_size_error`;
 * Gemini: "exceeds the maximum number of tokens").
 */
const CONTEXT_TOO_LONG =
  /context[_ ]length|context (window|size)|exceed_context_size|prompt is too long|too many (input )?tokens|exceeds the maximum number of tokens/i;

/** Why the upstream refused a request, as it said: its HTTP status and its error's code, type and message. */
export interface Refusal {
  status: number;
  code: unknown;
  type: unknown;
  message: string;
}

/**
 * What to try about a request the upstream refused as it was sent (a 4xx that is not about the
 * key, the model's name, a timeout, a rate limit or the account's credit): sending it again
 * unchanged gets the same answer, so the hint says so, and what to change when the refusal names it (a conversation
 * longer than the model's context window, or a request larger than the upstream accepts).
 */
export function refusalHint({ status, code, type, message }: Refusal): string {
  const said = [code, type, message].filter((part) => typeof part === "string").join(" ");
  if (status === 413 || CONTEXT_TOO_LONG.test(said)) {
    return (
      "the conversation is longer than the model accepts, and retrying it unchanged will not help: " +
      "start the next run with a lower contextMaxChars (the oldest turns are then left out of the request), or start a new session"
    );
  }
  return (
    "the upstream refused the request as sent, and retrying it unchanged will not help: " +
    "change what its message names (the session's model, tools or input)"
  );
}
