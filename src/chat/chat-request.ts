import { z } from "zod";
import { AppError, badRequest } from "../errors.js";
import { isIdOf } from "../ids.js";

/**
 * The body `useChat` (the AI SDK's DefaultChatTransport) posts: the chat's id, its messages
 * as UI messages, and what triggered the request. Only what the server reads is checked
 * closely; the SDK's other fields (metadata, provider data) are let through and ignored.
 */
const UiPart = z.looseObject({
  type: z.string().max(200),
  text: z.string().optional(),
  state: z.string().max(100).optional(),
  approval: z
    .looseObject({
      id: z.string().min(1).max(256),
      approved: z.boolean().optional(),
      reason: z.string().max(10_000).optional(),
    })
    .optional(),
});

export const ChatBody = z.looseObject({
  id: z.string().max(256).optional(),
  messages: z
    .array(
      z.looseObject({
        id: z.string().max(256).optional(),
        role: z.enum(["user", "assistant", "system"]),
        parts: z.array(UiPart).max(10_000),
      }),
    )
    .min(1, "messages must not be empty")
    .max(10_000),
  trigger: z.enum(["submit-message", "regenerate-message"]).optional(),
  messageId: z.string().max(256).optional(),
});
export type ChatBody = z.infer<typeof ChatBody>;

export interface ChatDecision {
  toolCallId: string;
  decision: "approve" | "deny";
  reason?: string;
}

/**
 * What a chat request asks: a new run with the last user message's text, or (the last message
 * being the assistant's, or the one `messageId` names, with tool approvals answered) the
 * decisions for the active run;
 * `runId` is the run the answered message shows (its id, as the stream's `start` gave it),
 * when it names one.
 */
export type ChatAction =
  | { kind: "start"; input: string }
  | { kind: "decide"; decisions: ChatDecision[]; runId?: string };

export function chatAction(body: ChatBody): ChatAction {
  // The session's history is the server's and only grows: an answer cannot be taken back and
  // asked again, and starting a run would leave the old answer (and the question twice) in what
  // the model is sent while the page shows otherwise.
  if (body.trigger === "regenerate-message") {
    throw badRequest(
      "REGENERATE_UNSUPPORTED",
      "regenerating an answer is not supported: the session keeps every answer; send the question again",
    );
  }
  const last = body.messages.at(-1);
  // An edit (`sendMessage({ text, messageId })`) replaces that user message on the page, keeping
  // its id, and drops what followed it: likewise not what the session's history can do.
  if (last?.role === "user" && body.messageId !== undefined && body.messageId === last.id) {
    throw badRequest(
      "EDIT_UNSUPPORTED",
      "editing a sent message is not supported: the session keeps every message and answer; send the new question as a new message",
    );
  }
  // The message whose approvals are posted: the assistant's message `messageId` names (the SDK's
  // sendMessage() names it, and a message of the user's refused since may follow it), else the last.
  const named = body.messageId === undefined ? undefined : body.messages.find((m) => m.id === body.messageId);
  const answered = named?.role === "assistant" ? named : last;
  if (answered?.role === "assistant") {
    // One decision per call: a part repeated (same call, same answer) is one decision (a body of
    // thousands of copies would otherwise be applied thousands of times); a call both approved
    // and denied refuses the whole request (400 CONTRADICTORY_APPROVALS) before any is applied.
    const byCall = new Map<string, ChatDecision>();
    for (const part of answered.parts) {
      if (part.state !== "approval-responded" || part.approval?.approved === undefined) continue;
      const { id: toolCallId, approved, reason } = part.approval;
      const decision = approved ? "approve" : "deny";
      const earlier = byCall.get(toolCallId);
      if (earlier?.decision === decision) continue;
      if (earlier) {
        throw badRequest(
          "CONTRADICTORY_APPROVALS",
          `the message both approves and denies tool call ${toolCallId}: nothing was decided; answer it once`,
          { toolCallId },
        );
      }
      byCall.set(toolCallId, { toolCallId, decision, ...(reason ? { reason } : {}) });
    }
    const decisions = [...byCall.values()];
    if (decisions.length === 0) {
      throw badRequest("NOTHING_TO_CONTINUE", "the message answered is the assistant's and answers no tool approval");
    }
    return {
      kind: "decide",
      decisions,
      ...(answered.id !== undefined && isIdOf("run", answered.id) ? { runId: answered.id } : {}),
    };
  }
  if (last?.role !== "user") throw badRequest("NO_USER_MESSAGE", "the last message must be the user's");
  const input = last.parts
    .filter((part) => part.type === "text")
    .map((part) => part.text ?? "")
    .join("");
  if (input.trim() === "") throw badRequest("EMPTY_MESSAGE", "the last user message has no text");
  return { kind: "start", input };
}

/**
 * A chat's new run takes an input as large as `POST /sessions/{id}/runs` takes one (its body:
 * BODY_LIMIT_BYTES), not as large as a chat's body (CHAT_BODY_LIMIT_BYTES, which is for the
 * assistant's messages posted back); a larger one is refused (413 BODY_TOO_LARGE).
 */
export function checkChatInput({ input, maxBytes }: { input: string; maxBytes: number }): void {
  if (Buffer.byteLength(input, "utf8") <= maxBytes) return;
  throw new AppError(
    "BODY_TOO_LARGE",
    `the message's text is larger than a run's input may be (${maxBytes} bytes, BODY_LIMIT_BYTES)`,
    413,
  );
}
