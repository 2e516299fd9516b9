/**
 * withDeadline's contract (src/agent/budget.ts): the deadline signal fires with a WallTimeSpent
 * reason when the run's wall-time budget runs out, and with the run's own reason when the run
 * is cancelled; once disposed (its request, wait or tool is over) it holds no timer and no
 * listener, so neither the budget's end nor a later cancellation reaches it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WallTimeSpent, withDeadline } from "../../src/agent/budget.js";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
});
afterEach(() => {
  vi.useRealTimers();
});

const BUDGET = { maxDurationMs: 10_000 };

describe("a deadline", () => {
  it("fires with WallTimeSpent once the budget left has passed", () => {
    const deadline = withDeadline(new AbortController().signal, BUDGET, 4_000);
    vi.advanceTimersByTime(5_999);
    expect(deadline.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(deadline.signal.reason).toBeInstanceOf(WallTimeSpent);
    expect((deadline.signal.reason as WallTimeSpent).maxDurationMs).toBe(10_000);
    deadline.dispose();
  });

  it("fires with the run's reason when the run is cancelled, and no timer is left", () => {
    const run = new AbortController();
    const deadline = withDeadline(run.signal, BUDGET, 0);
    const cancelled = new Error("by a DELETE /runs/{id} request");
    run.abort(cancelled);
    expect(deadline.signal.reason).toBe(cancelled);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("is the run's signal itself when there is no wall-time budget, or the run is cancelled already", () => {
    const run = new AbortController();
    expect(withDeadline(run.signal, {}, 0).signal).toBe(run.signal);
    run.abort(new Error("cancelled"));
    expect(withDeadline(run.signal, BUDGET, 0).signal).toBe(run.signal);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("once disposed, holds no timer and no listener: neither the budget's end nor a cancellation fires it", () => {
    const run = new AbortController();
    const added = vi.spyOn(run.signal, "addEventListener");
    const removed = vi.spyOn(run.signal, "removeEventListener");
    const deadline = withDeadline(run.signal, BUDGET, 0);
    expect(vi.getTimerCount()).toBe(1);
    deadline.dispose();
    expect(vi.getTimerCount()).toBe(0);
    expect(added).toHaveBeenCalledTimes(1);
    expect(removed.mock.calls).toEqual(added.mock.calls.map(([type, listener]) => [type, listener]));
    vi.advanceTimersByTime(BUDGET.maxDurationMs);
    run.abort(new Error("cancelled"));
    expect(deadline.signal.aborted).toBe(false);
  });

  it("keeps its state once disposed: a deadline that fired still says so", () => {
    const deadline = withDeadline(new AbortController().signal, BUDGET, 10_000);
    vi.advanceTimersByTime(1);
    deadline.dispose();
    expect(deadline.signal.reason).toBeInstanceOf(WallTimeSpent);
  });
});
