import { expect, it } from "vitest";
import { Deadline } from "../../src/deadline.js";

// The stages a shutdown runs after its grace period share one Deadline (see serve.ts): each
// waits at most its own cap and never past it, so their sum cannot outgrow the budget.

const never = new Promise<never>(() => {});

it("a stage reached once the shared deadline has passed does not wait for what hangs", async () => {
  const passed = Deadline.in(0);
  expect(passed.left()).toBe(0);
  expect(passed.within(1000)).toBe(0);
  expect(await passed.wait(never, 60_000)).toBe(false);
});

it("what already settled counts as in time, even past the deadline; a rejection ends the wait too", async () => {
  const passed = Deadline.in(0);
  expect(await passed.wait(Promise.resolve("done"), 1000)).toBe(true);
  expect(await passed.wait(Promise.reject(new Error("failed")), 1000)).toBe(true);
});

it("without a shared deadline each stage takes its own cap", async () => {
  expect(Deadline.NONE.left()).toBe(Number.POSITIVE_INFINITY);
  expect(Deadline.NONE.within(1000)).toBe(1000);
  expect(await Deadline.NONE.wait(Promise.resolve(), 1000)).toBe(true);
  expect(await Deadline.NONE.wait(never, 1)).toBe(false);
});

it("a deadline ahead leaves a stage its cap when that is less", () => {
  const ahead = Deadline.in(60_000);
  expect(ahead.within(1000)).toBe(1000);
  expect(ahead.left()).toBeGreaterThan(1000);
});
