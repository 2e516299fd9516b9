import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { AgentMessage, AssistantMessage } from "../agent/messages.js";
import type { ModelRequest, ToolSpec } from "../agent/model.js";
import { type ProviderProfile, profileNamed } from "./provider-profile.js";

const OPENAI = profileNamed("openai");

/**
 * The conversation in Chat Completions form: the system prompt (when non-empty) first,
 * then each message in order. An assistant message carries its `tool_calls` (with the
 * raw argument text the model sent) and `content: null` when it has calls but no text;
 * a tool result carries the `tool_call_id` it answers. What the provider returned beside
 * text and calls (the message's metadata) is sent back only as `profile` says.
 */
export function toChatMessages(
  system: string | undefined,
  messages: AgentMessage[],
  profile: ProviderProfile = OPENAI,
): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (system) out.push({ role: "system", content: system });
  for (const message of messages) out.push(toChatMessage(message, profile));
  return out;
}

/** One message in Chat Completions form (see toChatMessages). */
export function toChatMessage(message: AgentMessage, profile: ProviderProfile): ChatCompletionMessageParam {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.content };
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
    case "assistant":
      return toAssistantMessage(message, profile);
  }
}

function toAssistantMessage(message: AssistantMessage, profile: ProviderProfile): ChatCompletionAssistantMessageParam {
  const calls = message.toolCalls ?? [];
  const extras = providerExtras(message, profile);
  if (calls.length === 0) return { role: "assistant", content: message.content, ...extras.message };
  return {
    role: "assistant",
    content: message.content === "" ? null : message.content,
    tool_calls: calls.map((call, i) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.input },
      ...extras.calls[i],
    })),
    ...extras.message,
  };
}

/**
 * What `profile` sends back of an assistant message's metadata: the fields beside its text and
 * calls (`message`: OpenRouter's `reasoning_details`, DeepSeek's `reasoning_content`) and beside
 * each call (`calls`, in order: Gemini's `extra_content`). The one place that decides it: the
 * request form and the context window's count (see wire-body.ts) both read it.
 */
export function providerExtras(
  message: AssistantMessage,
  profile: ProviderProfile,
): { message: Record<string, unknown>; calls: Record<string, unknown>[] } {
  const calls = message.toolCalls ?? [];
  const extras: Record<string, unknown> = {};
  const details = profile.reasoningDetails ? message.metadata?.reasoningDetails : undefined;
  if (details?.length) extras.reasoning_details = details;
  if (profile.reasoningField) extras[profile.reasoningField] = message.metadata?.reasoning ?? "";
  const stored = message.metadata?.toolCallFields ?? {};
  return { message: extras, calls: calls.map((call) => pick(stored[call.id], profile.toolCallFields)) };
}

/** The `fields` of `source` that it has. */
function pick(source: Record<string, unknown> | undefined, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!source) return out;
  for (const field of fields) if (source[field] !== undefined) out[field] = source[field];
  return out;
}

/**
 * The tools as function tools; callers omit the field entirely when there are none. The
 * schema's `$schema` keyword goes: Gemini's function declarations refuse it, and no provider
 * needs it.
 */
export function toChatTools(tools: ToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map((tool) => {
    const { $schema: _dialect, ...parameters } = tool.parameters;
    return { type: "function", function: { name: tool.name, description: tool.description, parameters } };
  });
}

/** The streaming request body: usage requested, `tools` omitted when the list is empty. */
export function toChatRequest(
  request: ModelRequest,
  model: string,
  profile: ProviderProfile = OPENAI,
): ChatCompletionCreateParamsStreaming {
  return {
    model,
    messages: toChatMessages(request.system, request.messages, profile),
    ...(request.tools.length > 0 ? { tools: toChatTools(request.tools) } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
}
