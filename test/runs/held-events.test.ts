import { expect, it } from "vitest";
import { HeldEvents, MAX_HELD_BYTES, MAX_HELD_EVENTS } from "../../src/runs/held-events.js";
import type { StoredEvent } from "../../src/store/store.js";

const event = (seq: number, data = "{}"): StoredEvent =>
  ({ runId: "run_1", seq, type: "text.delta", data }) as StoredEvent;

it("gives back what it holds in order, by one or all at once", () => {
  const held = new HeldEvents();
  for (let seq = 1; seq <= 3000; seq++) {
    held.hold(event(seq));
    if (seq % 2 === 0) held.shift();
  }
  expect(held.size).toBe(1500);
  expect(held.shift()?.seq).toBe(1501);
  const rest = held.takeAll();
  expect(rest.map((e) => e.seq)).toEqual(Array.from({ length: 1499 }, (_, i) => 1502 + i));
  expect(held.size).toBe(0);
  expect(held.shift()).toBeUndefined();
});

it("past MAX_HELD_EVENTS it drops everything and holds nothing more until resumed", () => {
  const held = new HeldEvents();
  for (let seq = 1; seq <= MAX_HELD_EVENTS; seq++) held.hold(event(seq));
  expect(held.overflowed).toBe(false);
  held.hold(event(MAX_HELD_EVENTS + 1));
  expect(held.overflowed).toBe(true);
  expect(held.size).toBe(0);
  held.hold(event(MAX_HELD_EVENTS + 2));
  expect(held.size).toBe(0);
  held.resume();
  held.hold(event(MAX_HELD_EVENTS + 3));
  expect(held.takeAll().map((e) => e.seq)).toEqual([MAX_HELD_EVENTS + 3]);
});

it("past MAX_HELD_BYTES of data it overflows too, and what was taken frees its bytes", () => {
  const held = new HeldEvents();
  const half = "x".repeat(MAX_HELD_BYTES / 2);
  held.hold(event(1, half));
  held.hold(event(2, half));
  expect(held.overflowed).toBe(false);
  held.shift();
  held.hold(event(3, half));
  expect(held.overflowed).toBe(false);
  held.hold(event(4, "xx"));
  expect(held.overflowed).toBe(true);
  expect(held.size).toBe(0);
});
