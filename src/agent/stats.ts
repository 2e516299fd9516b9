import type { ModelUsage } from "./model.js";

export interface RunStats {
  modelCalls: number;
  toolCalls: number;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  durationMs: number;
}

export const emptyStats = (): RunStats => ({
  modelCalls: 0,
  toolCalls: 0,
  turns: 0,
  inputTokens: 0,
  outputTokens: 0,
  durationMs: 0,
});

export function addUsage(stats: RunStats, usage: ModelUsage | undefined): void {
  if (!usage) return;
  stats.inputTokens += usage.inputTokens;
  stats.outputTokens += usage.outputTokens;
}
