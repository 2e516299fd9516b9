import type { ToolCallDecision } from "../agent/approval.js";

interface Pending {
  resolve: (decision: ToolCallDecision) => void;
  timer: NodeJS.Timeout;
}

/**
 * What wakes a run waiting for approval, by tool-call id. Only a way to wake it: whether a
 * call is pending, and its decision, are in the ledger.
 */
export class ApprovalWaiters {
  readonly #pending = new Map<string, Pending>();

  /**
   * Waits for `settle` to be called for this call. After `timeoutMs`, `onTimeout`
   * runs (it is expected to settle the call, failing closed).
   */
  wait(
    toolCallId: string,
    { timeoutMs, onTimeout }: { timeoutMs: number; onTimeout: () => void },
  ): Promise<ToolCallDecision> {
    return new Promise((resolve) => {
      const timer = setTimeout(onTimeout, timeoutMs);
      timer.unref();
      this.#pending.set(toolCallId, { resolve, timer });
    });
  }

  /** The calls waiting, by id. */
  ids(): string[] {
    return [...this.#pending.keys()];
  }

  has(toolCallId: string): boolean {
    return this.#pending.has(toolCallId);
  }

  get size(): number {
    return this.#pending.size;
  }

  /** Resolves a waiting call; false when nothing waits for it. */
  settle(toolCallId: string, decision: ToolCallDecision): boolean {
    const pending = this.#pending.get(toolCallId);
    if (!pending) return false;
    clearTimeout(pending.timer);
    this.#pending.delete(toolCallId);
    pending.resolve(decision);
    return true;
  }

  /** Forgets one call without waking it (its request could not be recorded). */
  forget(toolCallId: string): void {
    const pending = this.#pending.get(toolCallId);
    if (pending) clearTimeout(pending.timer);
    this.#pending.delete(toolCallId);
  }

  /** Forgets every waiting call (the run was cancelled; the loop no longer waits). */
  clear(): void {
    for (const pending of this.#pending.values()) clearTimeout(pending.timer);
    this.#pending.clear();
  }
}
