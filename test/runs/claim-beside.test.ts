import { expect, it } from "vitest";
import { LiveRuns } from "../../src/runs/registry.js";
import { gate, settle } from "../fakes/gate.js";

/**
 * The start-up claim must leave alone the runs this process executes, including one whose
 * lease a start here has taken and not registered yet (it holds a reserved slot meanwhile).
 * LiveRuns.claimBeside sends the claim only once no slot is reserved, and a start that begins
 * meanwhile waits (`claimed`) until the claim is answered, so no lease is taken under it.
 */
it("a claim beside the live runs waits for starts between their lease and registration; new starts wait for it", async () => {
  const registry = new LiveRuns();
  const order: string[] = [];
  const slot = registry.reserve();
  const answer = gate<string[]>();
  const claim = registry.claimBeside(async (executed) => {
    order.push(`claim sent, leaving ${executed.length}`);
    return answer.wait;
  });
  await settle();
  expect(order).toEqual([]);
  slot.release();
  await settle();
  expect(order).toEqual(["claim sent, leaving 0"]);
  // A start now waits for the claim's answer before it reserves a slot (and takes a lease).
  const waiting = registry.claimed();
  expect(waiting).not.toBeNull();
  void waiting?.then(() => order.push("start may reserve"));
  await settle();
  expect(order).toEqual(["claim sent, leaving 0"]);
  answer.open([]);
  await claim;
  await waiting;
  expect(order).toEqual(["claim sent, leaving 0", "start may reserve"]);
  expect(registry.claimed()).toBeNull();
});
