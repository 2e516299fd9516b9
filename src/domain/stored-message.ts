import type { AgentMessage } from "../agent/messages.js";

/** A committed message, as stored and as served over HTTP: the loop's message and where it sits. */
export type StoredMessage = AgentMessage & {
  sessionId: string;
  runId: string;
  seq: number;
  createdAt: string;
};

/** Drops the stored-only fields: what the loop works with. */
export function toAgentMessage(message: StoredMessage): AgentMessage {
  const { sessionId: _s, runId: _r, seq: _q, createdAt: _c, ...rest } = message;
  return rest as AgentMessage;
}
