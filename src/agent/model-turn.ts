import { z } from "zod";
import { durationSpent, withDeadline } from "./budget.js";
import { selectContext } from "./context-window.js";
import { includedFiles } from "./included-files.js";
import { commitMessage, type LoopContext, type PhaseStop } from "./loop-context.js";
import { type AssistantMessage, type AssistantMetadata, type ToolCall, wellFormed } from "./messages.js";
import type { ModelResult, ToolSpec } from "./model.js";
import { addUsage } from "./stats.js";
import { estimateTokens, type StepTrace } from "./step-trace.js";
import { withUniqueIds } from "./unique-tool-call-ids.js";

/** A stop with no trace made no request (the context did not fit): the run stopped before the turn. */
export type ModelTurn =
  | { stop: PhaseStop; trace: StepTrace | null }
  | { stop: null; assistant: AssistantMessage; trace: StepTrace };

/**
 * The tools as offered to the model, their schemas derived from zod. A tool's spec is made
 * once and then reused while its schema, name and description stay the same (tools are bound
 * anew for every run): what is made of a spec later (its request form) is kept with it.
 */
export function toolSpecs(tools: LoopContext["tools"]): ToolSpec[] {
  return [...tools.values()].map(specOf);
}

/** Specs by schema, then by tool name: tools may share a schema (shell and shell_readonly do). */
const specs = new WeakMap<z.ZodType, Map<string, ToolSpec>>();
function specOf(tool: { name: string; description: string; inputSchema: z.ZodType }): ToolSpec {
  let byName = specs.get(tool.inputSchema);
  if (!byName) {
    byName = new Map();
    specs.set(tool.inputSchema, byName);
  }
  const known = byName.get(tool.name);
  if (known?.description === tool.description) return known;
  const spec: ToolSpec = {
    name: tool.name,
    description: tool.description,
    parameters: z.toJSONSchema(tool.inputSchema, { io: "input" }) as Record<string, unknown>,
  };
  byName.set(tool.name, spec);
  return spec;
}

/**
 * What the reply carried beside text and calls (see AssistantMetadataSchema), or undefined
 * when nothing: the provider fields of each call are keyed by the id the call was committed
 * under (`committed` is `result.toolCalls` in order, ids made unique).
 */
function assistantMetadata(
  result: Extract<ModelResult, { ok: true }>,
  committed: ToolCall[],
): AssistantMetadata | undefined {
  const metadata: AssistantMetadata = {};
  if (result.refusal) metadata.refusal = true;
  if (result.reasoning) metadata.reasoning = wellFormed(result.reasoning);
  if (result.reasoningDetails?.length) metadata.reasoningDetails = result.reasoningDetails;
  result.toolCalls.forEach((call, i) => {
    const id = committed[i]?.id;
    if (!call.providerFields || id === undefined) return;
    metadata.toolCallFields ??= {};
    metadata.toolCallFields[id] = call.providerFields;
  });
  return Object.keys(metadata).length > 0 ? metadata : undefined;
}

/**
 * One model request. Text and tool calls accumulate locally and become an
 * assistant message only when the stream ended cleanly (law 3).
 */
export async function runModelTurn(ctx: LoopContext, turn: number, specs: ToolSpec[]): Promise<ModelTurn> {
  const target = { model: ctx.modelName, providerProfile: ctx.providerProfile };
  const window = selectContext(ctx.history, ctx.contextMaxChars, ctx.model.sentExtraChars?.(target));
  if (!window.ok)
    return {
      stop: { stopReason: "error", error: { code: "CONTEXT_TOO_SMALL", message: window.message } },
      trace: null,
    };

  ctx.notify({ type: "turn.started", turn });
  ctx.stats.modelCalls++;
  // The wall-time budget ends a request still streaming when it runs out; the turn is dropped.
  const deadline = withDeadline(ctx.signal, ctx.budgets, ctx.elapsedMs());
  const { signal } = deadline;
  let result: ModelResult;
  try {
    result = await ctx.model.complete({
      model: ctx.modelName,
      providerProfile: ctx.providerProfile,
      system: ctx.system,
      messages: window.messages,
      tools: specs,
      signal,
      onTextDelta: (text) => ctx.notify({ type: "text.delta", text }),
      onReasoningDelta: (text) => ctx.notify({ type: "reasoning.delta", text }),
    });
  } finally {
    deadline.dispose();
  }
  addUsage(ctx.stats, result.usage);
  const trace: StepTrace = {
    turn,
    context: {
      messageCount: window.messages.length,
      estimatedTokens: estimateTokens(window.chars + (ctx.system?.length ?? 0)),
      trimmedCount: window.trimmedCount,
      includedFiles: includedFiles(window.messages),
    },
    model: {
      latencyMs: result.timing.latencyMs,
      firstTokenMs: result.timing.firstTokenMs,
      finishReason: result.finishReason ?? null,
      usage: result.usage ?? null,
      error: result.ok ? null : result.message,
    },
    tools: [],
  };

  if (!result.ok) {
    // Stopped by the wall-time budget; a failure of the model's own is reported as such.
    if (result.code === "MODEL_ABORTED" && signal.aborted && !ctx.signal.aborted) {
      return { stop: { stopReason: "budget_exhausted", budget: durationSpent(ctx.budgets, ctx.elapsedMs()) }, trace };
    }
    if (result.code === "MODEL_ABORTED" || ctx.signal.aborted) return { stop: { stopReason: "aborted" }, trace };
    const hint = result.hint ? { hint: result.hint } : {};
    return { stop: { stopReason: "error", error: { code: result.code, message: result.message }, ...hint }, trace };
  }
  // Checkpoint (b): the stream ended, but the run was cancelled: the turn is dropped.
  if (ctx.signal.aborted) return { stop: { stopReason: "aborted" }, trace };
  // Only white space is no text: committing it would make a blank final answer.
  if (result.text.trim() === "" && result.toolCalls.length === 0) {
    const message = "the model returned neither text nor tool calls";
    trace.model.error = message;
    return { stop: { stopReason: "error", error: { code: "EMPTY_RESPONSE", message } }, trace };
  }

  const toolCalls = withUniqueIds(
    result.toolCalls.map((call) => ({ id: call.id, name: wellFormed(call.name), input: wellFormed(call.input) })),
    ctx.usedToolCallIds,
  );
  const metadata = assistantMetadata(result, toolCalls);
  const assistant: AssistantMessage = {
    id: ctx.newId(),
    role: "assistant",
    content: wellFormed(result.text),
    ...(toolCalls.length ? { toolCalls } : {}),
    ...(metadata ? { metadata } : {}),
  };
  // The turn's trace so far (the model's part) goes out before its tools run, so a crash
  // mid-tool still leaves the turn's usage on record; the reports made with its tool results
  // replace it (see runToolCalls). A final reply's trace (it has no tools) goes out before it,
  // to be stored with the run's end.
  ctx.onStep(toolCalls.length ? { ...trace, tools: [] } : trace);
  const stop = await commitMessage(ctx, assistant, { final: toolCalls.length === 0 });
  if (stop) return { stop, trace };
  for (const call of toolCalls) ctx.usedToolCallIds.add(call.id);
  return { stop: null, assistant, trace };
}
