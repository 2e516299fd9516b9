import { afterEach, describe, expect, it, vi } from "vitest";
import { EndOfTurn } from "../../src/runs/end-of-turn.js";
import { isoNow } from "../../src/runs/iso-now.js";

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("EndOfTurn", () => {
  it("runs every task queued in a turn after that turn, in order, through one immediate", async () => {
    const immediates = vi.spyOn(globalThis, "setImmediate");
    const queue = new EndOfTurn();
    const ran: number[] = [];
    for (let i = 0; i < 100; i++) queue.queue(() => ran.push(i));
    await Promise.resolve();
    expect(ran).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(Array.from({ length: 100 }, (_, i) => i));
    // One for the queue, one for the test's own wait.
    expect(immediates).toHaveBeenCalledTimes(2);
  });

  it("a task queued while the queue runs goes to the next turn's run", async () => {
    const queue = new EndOfTurn();
    const ran: string[] = [];
    queue.queue(() => {
      ran.push("first");
      queue.queue(() => ran.push("again"));
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(["first"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(["first", "again"]);
  });
});

describe("isoNow", () => {
  it("gives the current time as ISO 8601, the same string within a millisecond and a new one after", () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2026-12-02T10:00:00.000Z"));
    const first = isoNow();
    expect(first).toBe("2026-12-02T10:00:00.000Z");
    expect(isoNow()).toBe(first);
    vi.setSystemTime(new Date("2026-12-02T10:00:00.001Z"));
    expect(isoNow()).toBe("2026-12-02T10:00:00.001Z");
  });
});
