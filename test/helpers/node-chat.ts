/** The AI SDK's own chat client (`ai`'s AbstractChat, what `useChat` wraps) in Node, for tests. */
import {
  AbstractChat,
  type ChatOnFinishCallback,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from "ai";

export class MemoryState implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

export class NodeChat extends AbstractChat<UIMessage> {
  constructor(
    api: string,
    options: { approveAutomatically?: boolean; onFinish?: ChatOnFinishCallback<UIMessage> } = {},
  ) {
    super({
      state: new MemoryState(),
      transport: new DefaultChatTransport({ api }),
      ...(options.onFinish ? { onFinish: options.onFinish } : {}),
      ...(options.approveAutomatically
        ? { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses }
        : {}),
    });
  }
}

export async function until(what: string, condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const assistant = (chat: NodeChat) => [...chat.messages].reverse().find((m) => m.role === "assistant");
export const texts = (message: UIMessage | undefined) =>
  (message?.parts ?? []).flatMap((p) => (p.type === "text" ? [p.text] : [])).join("");
export const tools = (message: UIMessage | undefined) =>
  (message?.parts ?? []).flatMap((p) => (p.type === "dynamic-tool" ? [p] : []));
