import type { AppContext } from "../app-context.js";
import type { ReplyCall } from "../store/store.js";

/**
 * Where a chat stream continuing after decisions starts: after `after`, the seq of the last
 * approval request they answer (the earlier stream ended there, so everything up to it was sent),
 * with `awaiting`, the calls of that request's reply from it on, without a result there (see
 * UiMessageProjection.atApprovalRequest).
 */
export interface Continuation {
  after: number;
  awaiting: ReplyCall[];
}

/** The start of an approval request's JSON (its fields in the order they are built), then its call's id as a JSON string. */
const REQUEST_HEAD = '{"type":"approval.requested","toolCallId":';
/** Characters of each approval request read: its call's id, not its input (up to the model's whole argument text). */
const HEAD_CHARS = 512;

/**
 * Where a stream continuing after `decisions` starts; null when they answer none of the run's
 * approval requests. Neither the requests' inputs nor any event before the point is read: each
 * request is told by its first characters (one whose call's id they do not hold is read whole),
 * and the reply's calls come from the ledger.
 */
export async function continuationOf(
  store: AppContext["store"],
  runId: string,
  decisions: readonly { toolCallId: string }[],
): Promise<Continuation | null> {
  const answered = new Set(decisions.map((d) => d.toolCallId));
  let last: { seq: number; toolCallId: string } | null = null;
  for (const { seq, head } of await store.events.headsOfType(runId, "approval.requested", HEAD_CHARS)) {
    const toolCallId = callOfHead(head) ?? (await callOfEvent(store, runId, seq));
    if (toolCallId !== undefined && answered.has(toolCallId) && seq > (last?.seq ?? 0)) last = { seq, toolCallId };
  }
  if (!last) return null;
  return { after: last.seq, awaiting: await store.toolCalls.restOfReply(runId, last.toolCallId) };
}

/** The call's id in the first characters of an approval request's JSON; undefined when they do not hold it whole. */
export function callOfHead(head: string): string | undefined {
  if (!head.startsWith(REQUEST_HEAD) || head[REQUEST_HEAD.length] !== '"') return undefined;
  // The JSON string ends at the first quote not escaped (a backslash escapes the one character after it).
  for (let i = REQUEST_HEAD.length + 1; i < head.length; i++) {
    if (head[i] === "\\") i++;
    else if (head[i] === '"') return JSON.parse(head.slice(REQUEST_HEAD.length, i + 1)) as string;
  }
  return undefined;
}

async function callOfEvent(store: AppContext["store"], runId: string, seq: number): Promise<string | undefined> {
  const [event] = await store.events.after(runId, seq - 1, 1);
  return event ? (JSON.parse(event.data) as { toolCallId?: string }).toolCallId : undefined;
}
