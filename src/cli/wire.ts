import { z } from "zod";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";

/**
 * What the client reads from the server, checked at the boundary. The schemas hold only
 * the fields the client uses and let others through, so a newer server still works.
 */

export const ErrorEnvelope = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

export const SessionBody = z.object({ id: z.string().min(1) });

export const RunBody = z.object({
  id: z.string().min(1),
  sessionId: z.string().optional(),
  status: z.string(),
  stopReason: z.string().nullable(),
  /** The server's one sentence on why the run stopped and what to try (absent from older servers). */
  stopDetail: z.string().nullable().optional(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  maxTurns: z.number().optional(),
  stats: z.object({ turns: z.number(), toolCalls: z.number() }).partial().optional(),
});
export type RunBody = z.infer<typeof RunBody>;

const ToolCall = z.object({ id: z.string(), name: z.string(), input: z.string() });

const Message = z.discriminatedUnion("role", [
  z.object({ role: z.literal("user"), content: z.string() }),
  z.object({ role: z.literal("assistant"), content: z.string(), toolCalls: z.array(ToolCall).optional() }),
  z.object({
    role: z.literal("tool"),
    content: z.string(),
    toolCallId: z.string(),
    isError: z.boolean(),
    metadata: z.object({ errorCode: z.string().nullable() }).partial().optional(),
  }),
]);

/** The events the client acts on; any other type is passed through as `other`. */
export const RunEvent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("run.started") }),
  z.object({ type: z.literal("turn.started"), turn: z.number() }),
  z.object({ type: z.literal("text.delta"), text: z.string() }),
  z.object({ type: z.literal("message"), message: Message }),
  z.object({
    type: z.literal("approval.requested"),
    toolCallId: z.string(),
    tool: z.string(),
    input: z.unknown(),
    reason: z.string(),
  }),
  z.object({
    type: z.literal("approval.resolved"),
    toolCallId: z.string(),
    decision: z.enum(["approve", "deny"]),
    reason: z.string().nullable(),
  }),
  z.object({ type: z.literal("tool.started"), toolCallId: z.string(), tool: z.string() }),
  z.object({ type: z.literal("run.finished"), run: RunBody }),
]);
export type RunEvent = z.infer<typeof RunEvent>;
export type ApprovalRequest = Extract<RunEvent, { type: "approval.requested" }>;

/** The answer to an approval decision. */
export const ApprovalDecisionBody = z.object({ status: z.string() });

const KNOWN_TYPES: ReadonlySet<string> = new Set(RunEvent.options.map((option) => option.shape.type.value));

/**
 * An event frame's data as a `RunEvent`; null for a type this client does not know (a
 * newer server's). A known type it cannot read is the server's fault: a `CliError`.
 */
export function decodeEvent(data: string): RunEvent | null {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new CliError(`the server sent an event that is not JSON: ${data.slice(0, 80)}`, EXIT.server);
  }
  const parsed = RunEvent.safeParse(json);
  if (parsed.success) return parsed.data;
  const type = (json as { type?: unknown } | null)?.type;
  if (typeof type === "string" && KNOWN_TYPES.has(type)) {
    throw new CliError(`the server sent a ${type} event this client cannot read: ${parsed.error.message}`, EXIT.server);
  }
  return null;
}
