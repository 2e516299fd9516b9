import type { ModelUsage } from "../agent/model.js";
import type { StepTrace } from "../agent/step-trace.js";
import type { RunView } from "../domain/run.js";
import type { RunEvent } from "../domain/run-events.js";
import { StringTable } from "../string-table.js";
import type { CommittedBatch, Delivery, RunObserver } from "./observer.js";

/** One model request of a run, reported once its trace is committed. Times are ms since the epoch. */
export interface ModelRequestFact {
  runId: string;
  sessionId: string | null;
  turn: number;
  startedAt: number;
  latencyMs: number;
  firstTokenMs: number | null;
  usage: ModelUsage | null;
  finishReason: string | null;
  /** Null when the request succeeded; else a stable code (the run's error code, or its stop reason). */
  errorType: string | null;
  errorMessage: string | null;
}

/**
 * One tool call's result (every call gets one); `executed`: its tool ran (its start was committed
 * here, and its result does not say it did not run). `startedAt`: its tool's start, else its
 * result's time; `durationMs`: how long its tool ran (0 when it did not).
 */
export interface ToolResultFact {
  runId: string;
  sessionId: string | null;
  toolCallId: string;
  tool: string;
  /** `ok`, or the result's error code. */
  outcome: string;
  executed: boolean;
  startedAt: number;
  durationMs: number;
}

/**
 * What metrics and traces are made of: what runs did, derived from their committed writes.
 * Every method is optional; none may throw.
 */
export interface RunFacts {
  committed?(batch: CommittedBatch): void;
  delivered?(delivery: Delivery): void;
  runStarted?(fact: { runId: string; sessionId: string | null; at: number }): void;
  modelRequest?(fact: ModelRequestFact): void;
  toolResult?(fact: ToolResultFact): void;
  runFinished?(fact: { run: RunView; at: number }): void;
  /**
   * This process gave the run up before its end was committed here (see RunObserver.left):
   * nothing more of it is told unless it runs here again.
   */
  runLeft?(fact: { runId: string; at: number }): void;
}

/** What the digest remembers of a run between its writes (dropped at its end here, or when it leaves this process). */
interface RunState {
  sessionId: string | null;
  /** Turns whose `turn.started` was seen and whose model request is not yet reported. */
  turnStarts: Map<number, number>;
  /** The results of the write being digested, by call: their tool, and whether it ran (see RunChange `message`). */
  results: Map<string, { tool: string; ran: boolean | undefined }>;
  toolStarts: Map<string, number>;
  /** A failed model request, reported with the run's end (which it causes) and its error code. */
  failedRequest: ModelRequestFact | null;
}

/**
 * Turns the committed writes of runs into facts for `sinks`. A model request is reported
 * from its turn's first step trace written after a `turn.started` this process saw, so a
 * trace written again (the model's part first, then the whole turn; or after a restart)
 * counts once; a failed one with its run's end, whose error code it takes. A run is kept track
 * of from its start (a run stored queued may be started by another instance, unseen here) to
 * its end here or its leaving this process; a queued run that ends without starting (cancelled)
 * is told to no sink. A tool result is counted under the tool its write
 * names (RunChange `message`), wherever and whenever its call was proposed.
 */
export class RunDigest implements RunObserver {
  readonly #runs = new StringTable<RunState>();

  /** The kinds of fact a sink has thrown on, each reported once. */
  readonly #failedKinds = new Set<string>();

  constructor(
    private readonly sinks: readonly RunFacts[],
    /** Told the first time a sink throws on each kind of fact (`kind`: the RunFacts method). */
    private readonly onSinkError: (err: unknown, kind: string) => void = () => {},
  ) {}

  /**
   * Tells every sink: one that throws (breaking its contract) loses its own fact, never the
   * other sinks' or the digest's record of the run.
   */
  #tell<K extends keyof RunFacts>(kind: K, fact: Parameters<NonNullable<RunFacts[K]>>[0]): void {
    for (const sink of this.sinks) {
      try {
        (sink[kind] as ((fact: unknown) => void) | undefined)?.call(sink, fact);
      } catch (err) {
        if (this.#failedKinds.has(kind)) continue;
        this.#failedKinds.add(kind);
        this.onSinkError(err, kind);
      }
    }
  }

  /** Every write is told as `committed`; only a stored one (`ok`, naming its run) is digested. */
  committed(batch: CommittedBatch): void {
    this.#tell("committed", batch);
    const { runId } = batch;
    if (batch.outcome !== "ok" || runId === null) return;
    // A queued run ended before it started (its end taken `from: "queued"`) never ran: it is
    // neither started nor finished, and nothing of it is told.
    if (batch.changes.some((change) => change.kind === "finish" && change.from === "queued")) return;
    let state = this.#runs.get(runId);
    if (!state) {
      state = {
        sessionId: batch.run?.sessionId ?? null,
        turnStarts: new Map(),
        results: new Map(),
        toolStarts: new Map(),
        failedRequest: null,
      };
      // A queued run's insert tells nothing to keep: its record is made by its start.
      if (batch.run?.status !== "queued") this.#runs.set(runId, state);
    }
    for (const event of batch.events) {
      if (event.type === "turn.started") state.turnStarts.set(event.turn, Date.parse(event.at));
      else if (event.type === "message") state.sessionId ??= event.message.sessionId;
    }
    for (const change of batch.changes) {
      if (change.kind === "step") this.#step(runId, state, change.step);
      else if (change.kind === "message" && change.message.role === "tool" && change.tool !== undefined) {
        state.results.set(change.message.toolCallId, { tool: change.tool, ran: change.ran });
      }
    }
    for (const event of batch.events) this.#event(state, event);
  }

  delivered(delivery: Delivery): void {
    this.#tell("delivered", delivery);
  }

  /** A run given up here before its end: its record is dropped. */
  left({ runId }: { runId: string }): void {
    // None left of a run that ended here (dropped with its run.finished).
    if (!this.#runs.delete(runId)) return;
    this.#tell("runLeft", { runId, at: Date.now() });
  }

  /** How many runs the digest keeps a record of now. */
  get runsKept(): number {
    return this.#runs.size;
  }

  /** A failed request ends its run: it is reported with the run's end, which names its error. */
  #step(runId: string, state: RunState, step: StepTrace): void {
    const startedAt = state.turnStarts.get(step.turn);
    if (startedAt === undefined) return;
    state.turnStarts.delete(step.turn);
    const { model } = step;
    const fact: ModelRequestFact = {
      runId,
      sessionId: state.sessionId,
      turn: step.turn,
      startedAt,
      latencyMs: model.latencyMs,
      firstTokenMs: model.firstTokenMs,
      usage: model.usage,
      finishReason: model.finishReason,
      errorType: model.error === null ? null : "_OTHER",
      errorMessage: model.error,
    };
    if (fact.errorType === null) this.#tell("modelRequest", fact);
    else state.failedRequest = fact;
  }

  #event(state: RunState, event: RunEvent): void {
    const { runId } = event;
    switch (event.type) {
      case "run.started":
        this.#tell("runStarted", { runId, sessionId: state.sessionId, at: Date.parse(event.at) });
        return;
      case "tool.started":
        state.toolStarts.set(event.toolCallId, Date.parse(event.at));
        return;
      case "message":
        this.#message(state, event);
        return;
      case "run.finished":
        if (state.failedRequest) {
          // A request cut by a cancel or a spent budget ends the run without an error: its stop names it.
          const errorType = event.run.error?.code ?? event.run.stopReason ?? "_OTHER";
          const fact = { ...state.failedRequest, errorType };
          this.#tell("modelRequest", fact);
        }
        this.#tell("runFinished", { run: event.run, at: Date.parse(event.at) });
        this.#runs.delete(runId);
        return;
    }
  }

  #message(state: RunState, event: Extract<RunEvent, { type: "message" }>): void {
    const { message } = event;
    if (message.role !== "tool") return;
    const id = message.toolCallId;
    const result = state.results.get(id);
    // A call started (cancelled as its start was written) may not have run: its result says so.
    const started = result?.ran === false ? undefined : state.toolStarts.get(id);
    const fact: ToolResultFact = {
      runId: event.runId,
      sessionId: message.sessionId,
      toolCallId: id,
      tool: result?.tool ?? "unknown",
      outcome: message.isError ? (message.metadata.errorCode ?? "error") : "ok",
      executed: started !== undefined,
      startedAt: started ?? Date.parse(message.createdAt),
      durationMs: started !== undefined ? message.metadata.durationMs : 0,
    };
    state.results.delete(id);
    state.toolStarts.delete(id);
    this.#tell("toolResult", fact);
  }
}
