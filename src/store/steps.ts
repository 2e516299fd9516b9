import { z } from "zod";
import type { StepTrace } from "../agent/step-trace.js";
import type { Db } from "./database.js";
import { parseJsonColumn } from "./json.js";

const UsageSchema = z.object({ inputTokens: z.number(), outputTokens: z.number() });
export const StepTraceSchema = z.object({
  turn: z.number(),
  context: z.object({
    messageCount: z.number(),
    estimatedTokens: z.number(),
    trimmedCount: z.number(),
    // Traces written before these fields existed read back with them empty.
    includedFiles: z.array(z.string()).default([]),
  }),
  model: z.object({
    latencyMs: z.number(),
    firstTokenMs: z.number().nullable(),
    finishReason: z.string().nullable(),
    usage: UsageSchema.nullable(),
    error: z.string().nullable(),
  }),
  tools: z.array(
    z.object({
      toolCallId: z.string(),
      tool: z.string(),
      fingerprint: z.string().default(""),
      status: z.enum(["ok", "error"]),
      errorCode: z.string().nullable(),
      durationMs: z.number(),
      outputChars: z.number(),
      truncated: z.boolean(),
    }),
  ),
});

/** A stored step trace, its JSON checked as it is read back. */
export const stepOfRow =
  (runId: string) =>
  (row: { data: string }): StepTrace =>
    parseJsonColumn(StepTraceSchema, row.data, `step of ${runId}`);

export function stepStore(db: Db) {
  const upsert = db.prepare("INSERT OR REPLACE INTO run_steps (run_id, turn, data) VALUES (?, ?, ?)");
  const last = db.prepare("SELECT data FROM run_steps WHERE run_id = +? ORDER BY turn DESC LIMIT 1");
  return {
    /** Records a step; a turn asked again after a restart replaces the lost attempt. */
    save(runId: string, step: StepTrace): void {
      upsert.run(runId, step.turn, JSON.stringify(step));
    },
    last(runId: string): StepTrace | null {
      const row = last.get(runId) as { data: string } | undefined;
      return row === undefined ? null : stepOfRow(runId)(row);
    },
  };
}

export type StepStore = ReturnType<typeof stepStore>;
