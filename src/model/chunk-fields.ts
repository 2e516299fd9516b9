import type { ModelUsage } from "../agent/model.js";

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A count of tokens: a whole number from 0 to 2^53 - 1. */
const isTokenCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * `{prompt_tokens, completion_tokens}` as usage; null for anything else, counts that are not
 * whole non-negative numbers included: a run's stats add them up and are stored, shown and
 * counted in the metrics as such (1e308 twice made a run's stats Infinity, which could not be
 * read back; a negative count threw in the metrics' counter).
 */
function readUsage(raw: unknown): ModelUsage | null {
  if (!isRecord(raw)) return null;
  const input = raw.prompt_tokens;
  const output = raw.completion_tokens;
  if (!isTokenCount(input) || !isTokenCount(output)) return null;
  return { inputTokens: input, outputTokens: output };
}

/**
 * A chunk's usage, wherever its provider puts it: the top-level `usage` (OpenAI), Groq's
 * `x_groq.usage`, or a usage inside choice 0 (some compatible servers); the first found wins.
 */
export function usageOf(chunk: Record<string, unknown>, choice: unknown): ModelUsage | null {
  return (
    readUsage(chunk.usage) ??
    (isRecord(chunk.x_groq) ? readUsage(chunk.x_groq.usage) : null) ??
    (isRecord(choice) ? readUsage(choice.usage) : null)
  );
}

export type ContentPiece = { kind: "text" | "reasoning"; text: string };

/**
 * The pieces of a `delta.content`, in order: a string is text; an array holds strings and
 * parts, `{type:"text", text}` being text and `{type:"thinking", thinking:[…]}` (Mistral's
 * Magistral) reasoning. Parts of other types (images, references) carry no text and are
 * skipped. Null when `content` is neither a string, an array, null nor absent, or when a
 * thinking part holds another (`inThinking`): nesting has no meaning, and unbounded it would
 * recurse as deep as the upstream's JSON.
 */
export function contentPieces(content: unknown, inThinking = false): ContentPiece[] | null {
  if (content === undefined || content === null) return [];
  if (typeof content === "string") return [{ kind: "text", text: content }];
  if (!Array.isArray(content)) return null;
  const pieces: ContentPiece[] = [];
  for (const part of content) {
    if (typeof part === "string") pieces.push({ kind: "text", text: part });
    else if (!isRecord(part)) return null;
    else if (part.type === "text" && typeof part.text === "string") pieces.push({ kind: "text", text: part.text });
    else if (part.type === "thinking") {
      if (inThinking) return null;
      const inner = contentPieces(part.thinking, true);
      if (inner === null) return null;
      for (const piece of inner) pieces.push({ kind: "reasoning", text: piece.text });
    }
  }
  return pieces;
}

/**
 * A delta's reasoning text: `reasoning_content` (DeepSeek, xAI, vLLM, DashScope) or
 * `reasoning` (OpenRouter, Groq, Ollama); a provider sending both sends the same text twice,
 * so the first one present counts.
 */
export function reasoningOf(delta: Record<string, unknown>): string {
  for (const field of ["reasoning_content", "reasoning"] as const) {
    const value = delta[field];
    if (typeof value === "string" && value !== "") return value;
  }
  return "";
}

/** A fragment's fields beside the ones assembled (`index`, `id`, `type`, `function`); null when none. */
export function extraFields(fragment: Record<string, unknown>): Record<string, unknown> | null {
  let extras: Record<string, unknown> | null = null;
  for (const key of Object.keys(fragment)) {
    if (key === "index" || key === "id" || key === "type" || key === "function") continue;
    const value = fragment[key];
    if (value === null || value === undefined) continue;
    extras ??= {};
    extras[key] = value;
  }
  return extras;
}

/** The deepest a provider field of a tool call may nest objects and arrays. */
export const MAX_FIELD_DEPTH = 64;

/**
 * Whether `value` nests objects or arrays more than `max` levels deep, walked without
 * recursion: a value from the upstream may nest as deep as its JSON, past what the recursive
 * JSON.stringify of it (when its message is stored and sent) can take.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: { item: unknown; depth: number }[] = [{ item: value, depth: 0 }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (next.item === null || typeof next.item !== "object") continue;
    if (next.depth >= max) return true;
    for (const child of Object.values(next.item)) stack.push({ item: child, depth: next.depth + 1 });
  }
  return false;
}

/**
 * A tool-call fragment's `function.arguments` as text: a string as it is; a JSON object or
 * array (text-generation-inference sends the arguments so) as its JSON text; anything else
 * "". Null when an object nests more than MAX_FIELD_DEPTH levels deep.
 */
export function argumentsText(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return "";
  return nestsDeeperThan(value, MAX_FIELD_DEPTH) ? null : JSON.stringify(value);
}
