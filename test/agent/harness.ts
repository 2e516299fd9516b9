import { expect } from "vitest";
import { z } from "zod";
import type { BeforeToolCall, BeforeToolCallRequest, ToolCallDecision } from "../../src/agent/approval.js";
import type { LoopNotice, ToolStart } from "../../src/agent/events.js";
import { assertValidHistory } from "../../src/agent/history.js";
import { type AgentMessage, AgentMessageSchema, type ToolMessage } from "../../src/agent/messages.js";
import type { Plan } from "../../src/agent/plan.js";
import { type AgentRunResult, type RunAgentParams, runAgent } from "../../src/agent/run-agent.js";
import type { AgentTool, AnyAgentTool, ToolExecutionContext, ToolOutcome } from "../../src/agent/tool.js";
import { toolOk } from "../../src/agent/tool.js";
import { ScriptedModel, type ScriptedStep } from "../fakes/scripted-model.js";

export type HarnessEvent = LoopNotice | ToolStart;

export interface HarnessOptions {
  steps?: ScriptedStep[];
  tools?: AnyAgentTool[];
  history?: AgentMessage[];
  /** The run's user message; ignored when `resume` is set. */
  input?: string;
  /** Resume a run: no `input` is passed. */
  resume?: boolean;
  beforeToolCall?: BeforeToolCall;
  /** Runs before each message commit (1-based index among this run's commits); a throw fails that commit. */
  onCommit?: (message: AgentMessage, index: number) => void | Promise<void>;
  /** Runs before a tool's start is committed; a throw fails that commit. */
  onToolStart?: (start: ToolStart) => void | Promise<void>;
  maxTurns?: number;
  contextMaxChars?: number;
  system?: string;
  log?: string[];
}

/** One run of the loop with a scripted model, recording what it commits and emits. */
export class Harness {
  readonly model: ScriptedModel;
  readonly controller = new AbortController();
  /** Deep copies of the messages commit() accepted, in order. */
  readonly committed: AgentMessage[] = [];
  /** How many times commit() was called (accepted or not). */
  commitCalls = 0;
  /** The notices emitted and the tool starts committed, in order. */
  readonly events: HarnessEvent[] = [];
  /** The plans committed messages carried (a plan tool's result), in order. */
  readonly plans: Plan[] = [];
  /** Whether each committed tool result's tool ran, as the loop said it (LoopCommit `ran`), by call. */
  readonly ran = new Map<string, boolean | undefined>();
  readonly log: string[];
  readonly history: AgentMessage[];

  constructor(private readonly options: HarnessOptions = {}) {
    this.model = new ScriptedModel(options.steps ?? []);
    this.log = options.log ?? [];
    this.history = options.history ?? [];
  }

  abort(): void {
    this.controller.abort();
  }

  run(overrides: Partial<RunAgentParams> = {}): Promise<AgentRunResult> {
    const o = this.options;
    const params: RunAgentParams = {
      model: this.model,
      system: o.system,
      tools: o.tools ?? [],
      history: this.history,
      beforeToolCall: o.beforeToolCall ?? (async () => ({ decision: "approve" })),
      commit: async (item) => {
        if (item.type === "tool.started") {
          await o.onToolStart?.(item);
          this.events.push(structuredClone(item));
          return;
        }
        const { message } = item;
        this.commitCalls++;
        this.log.push(`commit:${message.role}`);
        await o.onCommit?.(message, this.commitCalls);
        this.committed.push(structuredClone(message));
        if (message.role === "tool") this.ran.set(message.toolCallId, item.ran);
        if (item.plan) this.plans.push(structuredClone(item.plan));
      },
      emit: (event) => {
        this.events.push(structuredClone(event));
      },
      signal: this.controller.signal,
      maxTurns: o.maxTurns ?? 10,
      contextMaxChars: o.contextMaxChars,
      ...overrides,
    };
    if (!o.resume && !("input" in overrides)) params.input = o.input ?? "hello";
    return runAgent(params);
  }

  /** The whole history after the run: the prior history and everything committed. */
  get fullHistory(): AgentMessage[] {
    return [...this.history, ...this.committed];
  }

  toolResults(): ToolMessage[] {
    return this.committed.filter((m): m is ToolMessage => m.role === "tool");
  }

  /** The committed result of one tool call (exactly one must exist). */
  resultOf(toolCallId: string): ToolMessage {
    const results = this.toolResults().filter((m) => m.toolCallId === toolCallId);
    expect(results, `results of ${toolCallId}`).toHaveLength(1);
    return results[0] as ToolMessage;
  }

  eventsOf<T extends HarnessEvent["type"]>(type: T): Extract<HarnessEvent, { type: T }>[] {
    return this.events.filter((e): e is Extract<HarnessEvent, { type: T }> => e.type === type);
  }
}

/**
 * Law 4, checked twice: by the loop's own `assertValidHistory`, and independently:
 * every assistant tool call is answered by exactly one tool message, right after its
 * assistant message, in the model's order; no tool message answers nothing; every
 * message conforms to the message schema.
 */
export function expectEveryCallAnsweredOnce(history: readonly AgentMessage[]): void {
  expect(() => assertValidHistory(history)).not.toThrow();
  for (const message of history) expect(AgentMessageSchema.safeParse(message).success, message.id).toBe(true);
  let i = 0;
  while (i < history.length) {
    const message = history[i] as AgentMessage;
    const block: ToolMessage[] = [];
    let j = i + 1;
    while (j < history.length && history[j]?.role === "tool") {
      block.push(history[j] as ToolMessage);
      j++;
    }
    if (message.role === "tool") throw new Error(`tool result ${message.toolCallId} does not follow an assistant`);
    const calls = message.role === "assistant" ? (message.toolCalls ?? []) : [];
    expect(
      block.map((m) => m.toolCallId),
      `results after message ${i}`,
    ).toEqual(calls.map((c) => c.id));
    i = j;
  }
}

/** Checks what a finished run reports against what the harness saw committed. */
export function expectConsistent(h: Harness, result: AgentRunResult): void {
  expect(result.messages).toEqual(h.committed);
  expectEveryCallAnsweredOnce(h.fullHistory);
}

export interface TestToolSpec<T> {
  name: string;
  schema?: z.ZodType<T>;
  readOnly?: boolean;
  execute?: (input: T, context: ToolExecutionContext) => Promise<ToolOutcome>;
  /** Receives `start:<toolCallId>` and `end:<toolCallId>`. */
  log?: string[];
}

export type TestTool<T> = AgentTool<T> & { executions: { toolCallId: string; input: T }[] };

/** A tool that records every execution; by default it returns `<name> ok`. */
export function testTool<T = { text: string }>(spec: TestToolSpec<T>): TestTool<T> {
  const executions: { toolCallId: string; input: T }[] = [];
  const schema = spec.schema ?? (z.object({ text: z.string() }) as unknown as z.ZodType<T>);
  return {
    name: spec.name,
    description: `the ${spec.name} test tool`,
    inputSchema: schema,
    readOnly: spec.readOnly ?? false,
    executions,
    async execute(input, context) {
      executions.push({ toolCallId: context.toolCallId, input });
      spec.log?.push(`start:${context.toolCallId}`);
      try {
        return spec.execute ? await spec.execute(input, context) : toolOk(`${spec.name} ok`);
      } finally {
        spec.log?.push(`end:${context.toolCallId}`);
      }
    },
  };
}

/** A beforeToolCall that logs `approve:<id>`, records its requests and answers with `decide`. */
export function recordingApproval(
  log: string[],
  decide: (request: BeforeToolCallRequest) => ToolCallDecision | Promise<ToolCallDecision> = () => ({
    decision: "approve",
  }),
): BeforeToolCall & { requests: BeforeToolCallRequest[] } {
  const requests: BeforeToolCallRequest[] = [];
  const fn = async (request: BeforeToolCallRequest) => {
    requests.push(request);
    log.push(`approve:${request.toolCall.id}`);
    return decide(request);
  };
  return Object.assign(fn, { requests });
}

let seq = 0;
const nextId = (prefix: string) => `${prefix}_${++seq}`;

export const userMessage = (content: string): AgentMessage => ({ id: nextId("u"), role: "user", content });

export const assistantMessage = (content: string, toolCalls?: { id: string; name: string; input: string }[]) =>
  ({
    id: nextId("a"),
    role: "assistant",
    content,
    ...(toolCalls ? { toolCalls } : {}),
  }) satisfies AgentMessage;

export const toolMessage = (toolCallId: string, content: string, isError = false): AgentMessage => ({
  id: nextId("t"),
  role: "tool",
  toolCallId,
  content,
  isError,
  metadata: {
    errorCode: isError ? "SOME_ERROR" : null,
    retryable: false,
    durationMs: 0,
    outputChars: content.length,
    truncated: false,
  },
});
