/**
 * LiveRuns.handOver: the slot of a run an interrupting start takes the place of is that start's.
 * When the run leaves, its slot is kept (counted, nothing told it was freed: no queued run and no
 * run held for a slot takes it) until the start takes it, as a reservation, or releases the
 * handover (then it is given back as any slot). See
 * test/runs/interrupt-on-a-full-server-gets-the-slot-of-the-run-it-interrupts.test.ts.
 */
import { expect, it } from "vitest";
import type { LiveRun } from "../../src/runs/live-run.js";
import { LiveRuns } from "../../src/runs/registry.js";
import { settle } from "../fakes/gate.js";

/** A registry counting the slots it gives back, with one run registered. */
function oneRun() {
  const freed = { count: 0 };
  const registry = new LiveRuns(() => freed.count++);
  const live = { id: "run_a" } as LiveRun;
  registry.add(live);
  return { registry, live, freed };
}

it("a run handed over leaves its slot to the start that takes it: nothing is freed until that start's run gives it back", () => {
  const { registry, live, freed } = oneRun();
  const handover = registry.handOver(live);
  registry.remove(live);
  expect({ size: registry.size, freed: freed.count }).toEqual({ size: 1, freed: 0 });
  const slot = handover.take();
  expect(slot).not.toBeNull();
  expect({ size: registry.size, freed: freed.count }).toEqual({ size: 1, freed: 0 });
  handover.release();
  expect(freed.count).toBe(0);
  slot?.release();
  expect({ size: registry.size, freed: freed.count }).toEqual({ size: 0, freed: 1 });
});

it("a slot kept and not taken is given back when the handover is released, once", () => {
  const { registry, live, freed } = oneRun();
  const handover = registry.handOver(live);
  registry.remove(live);
  handover.release();
  handover.release();
  expect(handover.take()).toBeNull();
  expect({ size: registry.size, freed: freed.count }).toEqual({ size: 0, freed: 1 });
});

it("a handover withdrawn while its run is registered (taken too early, or released) leaves the run's end to free the slot", () => {
  for (const withdraw of ["take", "release"] as const) {
    const { registry, live, freed } = oneRun();
    const handover = registry.handOver(live);
    if (withdraw === "take") expect(handover.take()).toBeNull();
    else handover.release();
    registry.remove(live);
    expect({ withdraw, size: registry.size, freed: freed.count }).toEqual({ withdraw, size: 0, freed: 1 });
  }
});

it("a run hands its slot over once: a second handover hands over nothing", () => {
  const { registry, live, freed } = oneRun();
  const first = registry.handOver(live);
  const second = registry.handOver(live);
  registry.remove(live);
  expect(second.take()).toBeNull();
  second.release();
  expect({ size: registry.size, freed: freed.count }).toEqual({ size: 1, freed: 0 });
  first.take()?.release();
  expect({ size: registry.size, freed: freed.count }).toEqual({ size: 0, freed: 1 });
});

it("a kept slot does not hold a claim back (the start takes it only once the claim is answered)", async () => {
  const { registry, live } = oneRun();
  const handover = registry.handOver(live);
  registry.remove(live);
  let sent = false;
  const claim = registry.claimBeside(async () => {
    sent = true;
    return [];
  });
  await settle();
  expect(sent).toBe(true);
  await claim;
  handover.release();
});
