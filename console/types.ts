/** What the console reads of the API (openapi.yaml): messages and run events. */

export const EVENT_TYPES = [
  "run.started",
  "turn.started",
  "text.delta",
  "message",
  "approval.requested",
  "approval.resolved",
  "tool.started",
  "run.finished",
] as const;

export interface Message {
  id: string;
  runId: string;
  role: "user" | "assistant" | "tool";
  content: string;
  toolCalls?: { id: string; name: string; input: string }[];
  toolCallId?: string;
  isError?: boolean;
}

export type RunEvent = { runId: string; seq: number; type: (typeof EVENT_TYPES)[number] } & (
  | { type: "run.started" | "tool.started" }
  | { type: "turn.started"; turn: number }
  | { type: "text.delta"; text: string }
  | { type: "message"; message: Message }
  | { type: "approval.requested"; toolCallId: string; tool: string; input: unknown; reason: string }
  | { type: "approval.resolved"; toolCallId: string; decision: string }
  | {
      type: "run.finished";
      run: { stopReason: string; stopDetail?: string | null; error: { message: string } | null };
    }
);
