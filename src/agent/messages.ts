import { z } from "zod";

/** A tool call the model proposed; `input` is the raw JSON argument text it sent. */
export const ToolCallSchema = z.object({
  id: z.string().min(1),
  name: z.string(),
  input: z.string(),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

/**
 * What a tool result message records besides its content; `files`, when the tool named them,
 * the workspace files whose content the result shows (see ToolOutcome).
 */
export const ToolResultMetadataSchema = z.object({
  errorCode: z.string().nullable(),
  retryable: z.boolean(),
  durationMs: z.number().nonnegative(),
  outputChars: z.number().int().nonnegative(),
  truncated: z.boolean(),
  files: z.array(z.string()).optional(),
});
export type ToolResultMetadata = z.infer<typeof ToolResultMetadataSchema>;

/**
 * What an assistant message records besides its content, all optional: `refusal` (the model
 * declined; its text is the content), `reasoning` (what the provider streamed as reasoning,
 * never part of the answer), `reasoningDetails` (the same reasoning as the provider's typed
 * blocks, OpenRouter's `reasoning_details`, signatures and encrypted blocks included) and
 * `toolCallFields` (per tool-call id, the fields the provider sent beside the call, such as
 * Gemini's `extra_content` thought signature). Which of these
 * go back to the provider is the provider profile's decision (src/model/provider-profile.ts).
 */
export const AssistantMetadataSchema = z.object({
  refusal: z.literal(true).optional(),
  reasoning: z.string().optional(),
  reasoningDetails: z.array(z.record(z.string(), z.unknown())).optional(),
  toolCallFields: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
});
export type AssistantMetadata = z.infer<typeof AssistantMetadataSchema>;

/**
 * A message as the loop produces it. The store adds `sessionId`, `runId`, `seq`
 * and `createdAt` when it commits one.
 */
export const AgentMessageSchema = z.discriminatedUnion("role", [
  z.object({ id: z.string(), role: z.literal("user"), content: z.string() }),
  z.object({
    id: z.string(),
    role: z.literal("assistant"),
    content: z.string(),
    toolCalls: z.array(ToolCallSchema).optional(),
    metadata: AssistantMetadataSchema.optional(),
  }),
  z.object({
    id: z.string(),
    role: z.literal("tool"),
    content: z.string(),
    toolCallId: z.string(),
    isError: z.boolean(),
    metadata: ToolResultMetadataSchema,
  }),
]);
export type AgentMessage = z.infer<typeof AgentMessageSchema>;
export type UserMessage = Extract<AgentMessage, { role: "user" }>;
export type AssistantMessage = Extract<AgentMessage, { role: "assistant" }>;
export type ToolMessage = Extract<AgentMessage, { role: "tool" }>;

/**
 * `text` with each lone UTF-16 surrogate replaced by U+FFFD. Committed text is well-formed
 * (SQLite's UTF-8 cannot hold a lone surrogate and would store something else), so what the
 * model is sent later is exactly what the session's history holds.
 */
export function wellFormed(text: string): string {
  return (text as string & { toWellFormed(): string }).toWellFormed();
}
