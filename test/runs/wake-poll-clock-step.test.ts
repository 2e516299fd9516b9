import { afterEach, expect, it, vi } from "vitest";
import { startWakePoll } from "../../src/runs/wake-poll.js";
import type { RunNotifications } from "../../src/store/store.js";

afterEach(() => {
  vi.useRealTimers();
});

/**
 * The peers' notifications have a poll as a safety net, "every 10 s anyway" (README, Running
 * several instances). It was timed with Date.now(): a wall clock stepped back by an hour (NTP,
 * a restored VM) stopped the safety poll for that hour. It is timed on the monotonic clock now.
 */
it("the safety poll keeps its 10 s period when the wall clock steps back", async () => {
  vi.useFakeTimers({ now: new Date("2030-01-01T12:00:00Z") });
  const notifications = { connected: true } as unknown as RunNotifications;
  let polls = 0;
  const stop = startWakePoll({
    notifications,
    poll: async () => {
      polls++;
    },
    downMs: 1000,
    safetyMs: 10_000,
  });
  await vi.advanceTimersByTimeAsync(10_500);
  expect(polls).toBe(1);
  // NTP steps the wall clock back by an hour (the monotonic clock goes on).
  vi.setSystemTime(new Date("2030-01-01T11:00:10Z"));
  await vi.advanceTimersByTimeAsync(60_000);
  stop();
  // A minute of real time: 6 more safety polls.
  expect(polls).toBeGreaterThanOrEqual(6);
});
