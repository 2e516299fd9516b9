import type {
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { AgentMessage } from "../agent/messages.js";
import type { ModelRequest, ToolSpec } from "../agent/model.js";

/**
 * The conversation in Chat Completions form: the system prompt (when non-empty) first,
 * then each message in order. An assistant message carries its `tool_calls` (with the
 * raw argument text the model sent) and `content: null` when it has calls but no text;
 * a tool result carries the `tool_call_id` it answers.
 */
export function toChatMessages(system: string | undefined, messages: AgentMessage[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (system) out.push({ role: "system", content: system });
  for (const message of messages) out.push(toChatMessage(message));
  return out;
}

function toChatMessage(message: AgentMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.content };
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
    case "assistant": {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        content: message.content === "" ? null : message.content,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: call.input },
        })),
      };
    }
  }
}

/** The tools as function tools; callers omit the field entirely when there are none. */
export function toChatTools(tools: ToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** The streaming request body: usage requested, `tools` omitted when the list is empty. */
export function toChatRequest(request: ModelRequest, model: string): ChatCompletionCreateParamsStreaming {
  return {
    model,
    messages: toChatMessages(request.system, request.messages),
    ...(request.tools.length > 0 ? { tools: toChatTools(request.tools) } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
}
