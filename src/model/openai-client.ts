import OpenAI from "openai";
import type { ModelClient, ModelRequest, ModelResult, ModelUsage } from "../agent/model.js";
import { classifyError, type FailureContext, type ModelFailure } from "./classify-error.js";
import { clientSettings, FINISH_GRACE_MS } from "./client-settings.js";
import { CallbackError, rethrown } from "./delta-callbacks.js";
import { checkFinishReason } from "./finish-reason.js";
import { type ProviderSetting, resolveProfile, sendsBack } from "./provider-profile.js";
import { noRetryWhenQuotaExhausted } from "./quota-exhausted.js";
import { readChatStream, type StreamEnd } from "./read-stream.js";
import { displayURL, redactDetail, secretRedactor } from "./redact.js";
import { guardRequest, type RequestGuard } from "./request-guard.js";
import { capRetryDelay, type ModelFetch } from "./retry-delay-cap.js";
import { ABORTED, stopFailure } from "./stop-failure.js";
import { type StopSignalInit, withStopSignal } from "./stop-signal.js";
import { StreamAssembler } from "./stream-assembler.js";
import { upstreamFetch } from "./upstream-fetch.js";
import { encodeChatRequest, extraChars } from "./wire-body.js";

export {
  DEFAULT_BASE_URL,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_STREAM_MAX_MS,
} from "./client-settings.js";
export type { ModelFetch };

export interface OpenAIModelClientOptions {
  /** The API root (the SDK appends `/chat/completions`); default {@link DEFAULT_BASE_URL}. */
  baseURL?: string | undefined;
  /** Sent as `Authorization: Bearer`; without one no Authorization header is sent (local servers). */
  apiKey?: string | undefined;
  /**
   * The server's other secrets (AGENT_API_KEYS, STREAM_TOKEN_SECRET...): replaced by `[redacted]`,
   * as `apiKey` is, in every error text quoting the upstream (an upstream quotes the request).
   */
  secrets?: readonly string[] | undefined;
  /** The model asked when a request names none. */
  model: string;
  /** Retries of 408/409/429/5xx and connection failures/timeouts before the stream starts (SDK backoff, honouring `retry-after(-ms)`). */
  maxRetries?: number | undefined;
  /** Per attempt: time allowed until the response headers arrive. */
  requestTimeoutMs?: number | undefined;
  /** Once the response started: the longest silence between outputs before the turn fails MODEL_TIMEOUT (after a finish_reason with only usage/`[DONE]` since: FINISH_GRACE_MS at most, and the reply is kept). */
  idleTimeoutMs?: number | undefined;
  /** The longest one model request may last, its stream included, however steadily output comes (MODEL_TIMEOUT past it, unless the reply's finish_reason came, no output after it). */
  streamMaxMs?: number | undefined;
  /**
   * The most characters of text, reasoning and tool calls one reply may stream; past it the
   * stream is closed and the turn fails (MODEL_OUTPUT_TOO_LARGE). Unlimited when absent.
   */
  maxOutputChars?: number | undefined;
  /** The provider profiles OPENAI_PROVIDER names; a model it does not name is detected from the base URL and its name. */
  providerProfile?: ProviderSetting | undefined;
  /** Caps the wait an upstream's `retry-after(-ms)` header may impose between attempts (the SDK has no cap). */
  maxRetryDelayMs?: number | undefined;
  /** The fetch the SDK uses (default: global fetch). */
  fetch?: ModelFetch | undefined;
}

/**
 * A {@link ModelClient} over an OpenAI-compatible Chat Completions endpoint, streaming.
 *
 * Contract: `complete()` resolves with a {@link ModelResult} for every upstream outcome
 * (HTTP errors, timeouts, broken streams, aborts, odd finish reasons); it only rejects
 * if `onTextDelta` or `onReasoningDelta` throws. Retries happen only before the first byte of the stream
 * (by the SDK); once chunks flow, any failure fails the turn and nothing is retried, so
 * no text is ever delivered twice. Abort is honoured at once in every phase, including
 * the SDK's retry backoff.
 */
export function createOpenAIModelClient(options: OpenAIModelClientOptions): ModelClient {
  const { maxRetries, requestTimeoutMs, idleTimeoutMs, streamMaxMs, maxRetryDelayMs, baseURL } =
    clientSettings(options);
  const redactSecrets = secretRedactor([options.apiKey ?? "", ...(options.secrets ?? [])]);

  const client = new OpenAI({
    baseURL,
    // The SDK insists on a key; without one we send none (`Authorization: null` omits the header).
    apiKey: options.apiKey || "unused",
    ...(options.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
    // Explicit, so ambient OPENAI_ORG_ID / OPENAI_PROJECT_ID do not leak into requests.
    organization: null,
    project: null,
    maxRetries,
    timeout: requestTimeoutMs,
    // Failures are reported as values; the SDK's console logging (which may print raw chunks) stays off.
    logLevel: "off",
    fetch: capRetryDelay(noRetryWhenQuotaExhausted(withStopSignal(options.fetch ?? upstreamFetch)), maxRetryDelayMs),
  });

  return {
    complete: (request) =>
      completeOnce({
        client,
        request,
        idleTimeoutMs,
        streamMaxMs,
        maxOutputChars: options.maxOutputChars,
        baseURL,
        providerProfile: options.providerProfile,
        failureContext: (phase, model) => ({
          baseURL,
          model,
          redactSecrets,
          maxRetries,
          requestTimeoutMs,
          phase,
        }),
        model: request.model || options.model,
      }),
    sentExtraChars: (target) => {
      const model = target.model || options.model;
      const configured = options.providerProfile;
      const profile = resolveProfile({ requested: target.providerProfile, configured, baseURL, model });
      return sendsBack(profile) ? (message) => extraChars(message, profile) : undefined;
    },
  };
}

interface CompleteArgs {
  client: OpenAI;
  request: ModelRequest;
  model: string;
  idleTimeoutMs: number;
  streamMaxMs: number;
  maxOutputChars: number | undefined;
  baseURL: string;
  providerProfile: ProviderSetting | undefined;
  failureContext: (phase: FailureContext["phase"], model: string) => FailureContext;
}

async function completeOnce({
  client,
  request,
  model,
  idleTimeoutMs,
  streamMaxMs,
  maxOutputChars,
  baseURL,
  providerProfile,
  failureContext,
}: CompleteArgs): Promise<ModelResult> {
  const startedAt = performance.now();
  const now = () => performance.now();
  const assembler = new StreamAssembler({
    startedAt,
    now,
    maxOutputChars,
    onTextDelta: rethrown(request.onTextDelta),
    onReasoningDelta: rethrown(request.onReasoningDelta),
  });
  const guard = guardRequest({ signal: request.signal, idleTimeoutMs, maxMs: streamMaxMs });
  /** Output came in a chunk after the first finish_reason's: that came early, the full idle timeout is back. */
  let outputAfterFinish = false;
  /** Upstream text (a header, a finish_reason) as a message or trace may show it: redacted and capped. */
  const quote = (text: string) => redactDetail(text, failureContext("stream", model).redactSecrets);

  /** `finishReason`: the one the upstream gave (quoted), when it ended the reply with one that fails the turn. */
  const fail = (failure: ModelFailure, finishReason?: string | null): ModelResult => {
    const usage = assembler.usageSoFar();
    return {
      ok: false,
      ...failure,
      ...(finishReason ? { finishReason } : {}),
      ...(usage ? { usage } : {}),
      timing: { latencyMs: Math.round(now() - startedAt), firstTokenMs: roundOrNull(assembler.firstTokenSoFar()) },
    };
  };
  const stoppedFailure = () =>
    stopFailure({
      signal: request.signal,
      guard,
      from: () => displayURL(failureContext("stream", model).baseURL),
      idleTimeoutMs,
      streamMaxMs,
      replyWhole: assembler.sawFinishReason() && !outputAfterFinish,
    });

  try {
    if (request.signal.aborted) return fail(ABORTED);

    const body = encodeChatRequest(
      request,
      model,
      resolveProfile({ requested: request.providerProfile, configured: providerProfile, baseURL, model }),
    );
    const opened = await openStream({ client, body, guard });
    if (!opened.ok) return fail(stoppedFailure() ?? classifyError(opened.error, failureContext("request", model)));

    const response = opened.response;
    let end: StreamEnd;
    try {
      guard.touch();
      end = await readChatStream({
        body: (response.body ?? []) as AsyncIterable<Uint8Array>,
        headers: response.headers,
        assembler,
        maxOutputChars,
        onEvent: (afterFinish) => {
          if (afterFinish) guard.restoreIdle();
          outputAfterFinish ||= afterFinish;
          guard.touch();
        },
        onReplyEnd: () => guard.shortenIdle(FINISH_GRACE_MS),
      });
    } catch (error) {
      if (error instanceof CallbackError) throw error.cause;
      return fail(stoppedFailure() ?? classifyError(error, failureContext("stream", model)));
    }
    // An abort, the idle timer or the deadline may have ended the read (failing it or not: stopFailure).
    const stopped = stoppedFailure();
    if (stopped) return fail(stopped);
    if (!end.ok) return fail(end.failure);

    const finished = assembler.finish();
    if (!finished.ok) return fail({ code: "MODEL_BAD_RESPONSE", message: finished.message });
    const turn = finished.value;
    if (turn.chunkCount === 0) {
      return fail({
        code: "MODEL_BAD_RESPONSE",
        message: `the upstream answered without any stream chunks (content-type ${quote(response.headers.get("content-type") ?? "none")}): check that OPENAI_BASE_URL points to an OpenAI-compatible API root`,
      });
    }
    // A stream the upstream ended with [DONE] is complete even without a finish_reason.
    const finishReason =
      turn.finishReason ?? (end.sawDone ? (turn.toolCalls.length > 0 ? "tool_calls" : "stop") : null);
    const finishFailure = checkFinishReason({ reason: finishReason, quote });
    if (finishFailure) return fail(finishFailure, finishReason && quote(finishReason));
    const usage: ModelUsage = turn.usage ?? { inputTokens: 0, outputTokens: 0 };
    return {
      ok: true,
      text: turn.text,
      refusal: turn.refusal,
      reasoning: turn.reasoning,
      ...(turn.reasoningDetails.length > 0 ? { reasoningDetails: turn.reasoningDetails } : {}),
      toolCalls: turn.toolCalls,
      finishReason: finishReason ?? "stop",
      usage,
      timing: { latencyMs: Math.round(now() - startedAt), firstTokenMs: roundOrNull(turn.firstTokenMs) },
    };
  } finally {
    guard.dispose();
  }
}

type Opened = { ok: true; response: Response } | { ok: false; error: unknown };

/**
 * Sends the request and waits for the response headers (the SDK retries in here, and turns
 * an error status into its APIError). Races the guard so an abort is honoured even while the
 * SDK sleeps between retries, which it does without watching the signal; the abandoned
 * attempt then rejects in the background. The body is left unread for readChatStream.
 */
async function openStream({
  client,
  body,
  guard,
}: {
  client: OpenAI;
  body: Buffer;
  guard: RequestGuard;
}): Promise<Opened> {
  // The body goes as the bytes encoded (see encodeChatRequest): the SDK would encode the object again.
  const pending = client
    .post("/chat/completions", {
      body,
      headers: { "content-type": "application/json" },
      stream: true,
      // Not the SDK's `signal` (see withStopSignal): the fetch ends the request on a stop.
      fetchOptions: { stopSignal: guard.signal } satisfies StopSignalInit as object,
    })
    .asResponse();
  pending.catch(() => {});
  const outcome = await Promise.race([
    pending.then(
      (response): Opened => ({ ok: true, response }),
      (error: unknown): Opened => ({ ok: false, error }),
    ),
    guard.stopped.then((): Opened => ({ ok: false, error: new Error("aborted") })),
  ]);
  if (!outcome.ok) pending.then(cancelBody, () => {});
  return outcome;
}

/** Releases the body of a response nobody will read. */
function cancelBody(response: Response): void {
  const body = response.body as unknown as { destroy?: () => void; cancel?: () => Promise<void> } | null;
  if (body?.destroy) body.destroy();
  else body?.cancel?.().catch(() => {});
}

function roundOrNull(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms);
}
