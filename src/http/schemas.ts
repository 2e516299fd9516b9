import { z } from "zod";
import { MAX_STORED_BUDGET, MAX_TIMER_MS } from "../config.js";
import { ApprovalPolicySchema } from "../domain/approval-policy.js";
import { IF_BUSY } from "../domain/run.js";
import { WebhookTargetSchema } from "../domain/webhook.js";
import { PROVIDER_PROFILES } from "../model/provider-profile.js";
import { MAX_SHARED_WORKSPACE_NAME } from "../sessions/session-view.js";
import { MAX_KEY } from "../store/page.js";
import { NON_FINITE_MESSAGE, nonFinitePath } from "./finite-json.js";

const id = z.string().min(1).max(64);

/**
 * The longest path parameter the API documents (a tool call's id, a chat's id), in characters
 * once decoded: the router refuses a longer one before any route's schema sees it.
 */
export const MAX_PATH_PARAM_LENGTH = 256;
const longId = z.string().min(1).max(MAX_PATH_PARAM_LENGTH);

export const SessionParams = z.strictObject({ id });
export const RunParams = z.strictObject({ id });
export const ApprovalParams = z.strictObject({ id, toolCallId: longId });
/** `chatId`: the id the AI SDK derives a chat's resume URL from (ignored). */
export const ChatStreamParams = z.strictObject({ id, chatId: longId });

/**
 * A query parameter openapi.yaml types `integer`, from `min` to `max`, written as decimal digits:
 * `1e2`, `0x10`, `16.0`, ` 16` or an empty value, which Number() would read, are refused.
 */
const decimalInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, "an integer, written as decimal digits")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** A list's `limit` (openapi.yaml: an integer, 1 to 200). */
const PageLimit = decimalInteger(1, 200);

export const PageQuery = z.strictObject({
  limit: PageLimit.default(50),
  // Any string: one the API did not give (empty, too long, of another shape) is the list's
  // 400 INVALID_CURSOR, the one answer a client restarts its paging on. (The request line's
  // length is bounded by the server's header limit.)
  cursor: z.string().optional(),
});

/** A page of a session's messages: oldest first (the default), or newest first. */
export const MessagePageQuery = PageQuery.extend({
  order: z.enum(["oldest", "newest"]).default("oldest"),
});

/** The most keys a session's `metadata` has (each at most 256 characters). */
export const METADATA_MAX_KEYS = 64;
/** The most bytes a session's `metadata` is as JSON (UTF-8): it is stored, and listed with the session. */
export const METADATA_MAX_BYTES = 16 * 1024;

/**
 * A session's metadata: any JSON the client keeps with it, within METADATA_MAX_KEYS and
 * METADATA_MAX_BYTES, stored as sent: a number a double cannot hold (`1e999`) is refused at
 * its path (see nonFinitePath), not stored as null.
 */
const SessionMetadata = z
  .record(z.string().max(256), z.unknown())
  .refine((m) => Object.keys(m).length <= METADATA_MAX_KEYS, {
    message: `metadata has at most ${METADATA_MAX_KEYS} keys`,
    abort: true,
  })
  .superRefine((m, ctx) => {
    const path = nonFinitePath(m);
    if (path) ctx.addIssue({ code: "custom", message: NON_FINITE_MESSAGE, path, continue: false });
  })
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= METADATA_MAX_BYTES, {
    message: `metadata is at most ${METADATA_MAX_BYTES} bytes as JSON`,
  });

export const CreateSessionBody = z
  .strictObject({
    system: z.string().max(200_000).optional(),
    model: z.string().min(1).max(200).optional(),
    tools: z.array(z.string().min(1).max(64)).max(64).optional(),
    approval: ApprovalPolicySchema.optional(),
    workspace: z.string().min(1).max(MAX_SHARED_WORKSPACE_NAME).optional(),
    providerProfile: z.enum(PROVIDER_PROFILES).optional(),
    planning: z.boolean().optional(),
    metadata: SessionMetadata.optional(),
    webhook: WebhookTargetSchema.optional(),
  })
  .nullish()
  .transform((body) => body ?? {});

/** A run's budgets, loop-guard limit and planning switch; each falls back to the server's (or session's) setting. */
const RunLimitsBody = z.strictObject({
  maxTokens: z.number().int().min(1).max(MAX_STORED_BUDGET).optional(),
  maxDurationMs: z.number().int().min(1).max(MAX_TIMER_MS).optional(),
  maxToolCalls: z.number().int().min(1).max(100_000).optional(),
  loopRepeatLimit: z
    .number()
    .int()
    .min(0)
    .max(1000)
    .refine((n) => n !== 1, "loopRepeatLimit must be 0 (off) or at least 2")
    .optional(),
  planning: z.boolean().optional(),
});

export const StartRunBody = z.strictObject({
  input: z.string().min(1, "input must not be empty"),
  maxTurns: z.number().int().min(1).max(1000).optional(),
  contextMaxChars: z.number().int().min(1).max(MAX_STORED_BUDGET).optional(),
  approval: ApprovalPolicySchema.optional(),
  ...RunLimitsBody.shape,
  webhook: WebhookTargetSchema.optional(),
  ifBusy: z.enum(IF_BUSY).optional(),
});

/** A boolean query flag: true, false, 1 or 0; absent is false. */
const QueryFlag = z
  .enum(["true", "false", "1", "0"])
  .optional()
  .transform((v) => v === "true" || v === "1");

export const StartRunQuery = z.strictObject({
  wait: QueryFlag,
  /** With `Accept: text/event-stream`: include `reasoning.delta` events. */
  reasoning: QueryFlag,
});

export const EventsQuery = z.strictObject({
  after: decimalInteger(0, MAX_KEY).optional(),
  /** A stream token (`POST /runs/{id}/stream-token`); checked by the authentication hook. */
  token: z.string().max(2048).optional(),
  /** Include `reasoning.delta` events (off by default). */
  reasoning: QueryFlag,
});

export const DecisionBody = z.strictObject({
  decision: z.enum(["approve", "deny"]),
  reason: z.string().max(10_000).optional(),
});
