import type { StepTrace } from "../../src/agent/step-trace.js";
import type { RunEvent } from "../../src/domain/run-events.js";
import type { Store } from "../../src/store/store.js";
import { runRecord } from "./seed.js";

/** A step trace of `turn` whose file names take about `bytes` bytes. */
export function stepOf(turn: number, bytes = 0): StepTrace {
  const files = Math.ceil(bytes / 1000);
  return {
    turn,
    context: {
      messageCount: turn,
      estimatedTokens: 10 * turn,
      trimmedCount: 0,
      includedFiles: Array.from({ length: files }, (_, i) => `dir/${turn}/${i}-`.padEnd(996, "f")),
    },
    model: { latencyMs: 5, firstTokenMs: 1, finishReason: "tool_calls", usage: null, error: null },
    tools: [],
  };
}

/**
 * Writes into `store` a running run `runId` of session `sessionId` (created already) with
 * `steps` step traces of ~`stepBytes` each, one reply of `approvals` calls awaiting approval
 * (each a `write_file` whose input is ~`inputBytes`; their ids descend while the model's order
 * ascends, so id order is not the ledger's), and an `approval.requested` webhook delivery for
 * each of them, to `url`. Returns the calls' ids in the model's order.
 */
export async function seedLargeRun(
  store: Store,
  {
    sessionId,
    runId,
    steps = 0,
    stepBytes = 0,
    approvals = 0,
    inputBytes = 100,
    url = "https://hooks.example.com/in",
  }: {
    sessionId: string;
    runId: string;
    steps?: number;
    stepBytes?: number;
    approvals?: number;
    inputBytes?: number;
    url?: string;
  },
): Promise<string[]> {
  const at = () => new Date().toISOString();
  const webhook = { url, events: ["approval.requested" as const] };
  await store.runs.create(runRecord({ id: runId, sessionId, webhook }), [
    { type: "run.started", runId, seq: 1, at: at() },
  ]);
  for (let turn = 1; turn <= steps; turn++) {
    await store.commitRun(runId, [{ kind: "step", step: stepOf(turn, stepBytes) }], []);
  }
  if (approvals === 0) return [];
  const calls = Array.from({ length: approvals }, (_, i) => ({
    id: `call_${String(approvals - i).padStart(4, "0")}`,
    name: "write_file",
    input: JSON.stringify({ path: `f${i}.txt`, content: `${i} `.padEnd(inputBytes, "c") }),
  }));
  const seq = (await store.messages.lastSeq(sessionId)) + 1;
  const message = { id: `msg_${runId}`, role: "assistant" as const, content: "", toolCalls: calls };
  await store.commitRun(
    runId,
    [{ kind: "message", message: { ...message, sessionId, runId, seq, createdAt: at() } }],
    [],
  );
  let eventSeq = await store.events.lastSeq(runId);
  for (const call of calls) {
    const reason = "write_file requires approval";
    const event: RunEvent = {
      type: "approval.requested",
      toolCallId: call.id,
      tool: call.name,
      input: JSON.parse(call.input),
      reason,
      runId,
      seq: ++eventSeq,
      at: at(),
    };
    await store.commitRun(
      runId,
      [{ kind: "toolCall.awaitingApproval", toolCallId: call.id, reason, at: at() }],
      [event],
    );
  }
  return calls.map((call) => call.id);
}

/** Every page of a run's list, in order (pages of 200 items, as a client would follow them). */
async function allPages<T>(
  page: (query: { runId: string; after: number | null; limit: number }) => Promise<{
    items: T[];
    nextCursor: string | null;
  }>,
  runId: string,
): Promise<T[]> {
  const all: T[] = [];
  for (let after: number | null = null; ; ) {
    const { items, nextCursor } = await page({ runId, after, limit: 200 });
    all.push(...items);
    if (nextCursor === null) return all;
    after = Number(nextCursor);
  }
}

/** The run's step traces, in turn order. */
export const allSteps = (store: Store, runId: string) => allPages((query) => store.steps.page(query), runId);

/** The run's webhook deliveries as listed (no bodies), oldest first, without their page key. */
export const allDeliveries = async (store: Store, runId: string) =>
  (await allPages((query) => store.webhooks.page(query), runId)).map(({ eventSeq: _seq, ...delivery }) => delivery);
