import type { LoopContext } from "./loop-context.js";
import type { StepTrace, ToolTrace } from "./step-trace.js";

/**
 * A turn's step trace as its tool results are committed (see runToolCalls): `add` puts a
 * call's line in it and, when `report`, reports the trace so far (a copy) through `onStep`,
 * made just before that result is committed, so a host holding steps for its next write
 * stores it with the result; `settle` reports it once more only when a line was added since
 * the last report. Without a step (a resumed run with no stored trace) nothing is reported.
 */
export interface TurnStep {
  add(line: ToolTrace, report: boolean): void;
  settle(): void;
}

export function turnStep(ctx: Pick<LoopContext, "onStep">, step: StepTrace | null): TurnStep {
  let unreported = false;
  const report = (): void => {
    unreported = false;
    if (step) ctx.onStep({ ...step, tools: [...step.tools] });
  };
  return {
    add(line, now) {
      step?.tools.push(line);
      unreported = true;
      if (now) report();
    },
    settle() {
      if (unreported) report();
    },
  };
}
