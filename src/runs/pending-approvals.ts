import type { ToolCallDecision } from "../agent/approval.js";

interface Pending {
  resolve: (decision: ToolCallDecision) => void;
  timer: NodeJS.Timeout;
}

/** The approval requests of one run that wait for a person, by tool-call id. */
export class PendingApprovals {
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

  /** Forgets every waiting call (the run was cancelled; the loop no longer waits). */
  clear(): void {
    for (const pending of this.#pending.values()) clearTimeout(pending.timer);
    this.#pending.clear();
  }
}
