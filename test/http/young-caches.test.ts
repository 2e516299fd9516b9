import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ObjectSlot } from "../../src/object-slot.js";

const run = promisify(execFile);
const fixture = fileURLToPath(new URL("../fixtures/gc/young-caches.mjs", import.meta.url));

/**
 * While the fixture served with `cache`: the bytes V8's young-generation collections promoted,
 * and those allocated in all.
 */
async function serving(cache: string): Promise<{ promoted: number; allocated: number }> {
  const { stdout } = await run(process.execPath, ["--trace-gc-nvp", fixture, cache], { maxBuffer: 64 * 1024 * 1024 });
  expect(stdout).toContain("served 20000");
  const field = (line: string, name: string) => Number(new RegExp(` ${name}=(\\d+)`).exec(line)?.[1] ?? Number.NaN);
  let promoted = 0;
  let allocated = 0;
  for (const line of stdout.split("\n")) {
    if (!/ gc=\w+ /.test(line)) continue;
    allocated += field(line, "allocated");
    if (/ gc=s /.test(line)) promoted += field(line, "promoted");
  }
  return { promoted, allocated };
}

describe("caches kept on short-lived objects", () => {
  it("an object slot lets its value die with its object in young collections, where a WeakMap's value is made old", async () => {
    const [slot, weakMap] = [await serving("slot"), await serving("weakmap")];
    expect(weakMap.promoted).toBeGreaterThan(4 * slot.promoted);
  });

  it("a stream's batches of events are not made old by young collections once the events are gone", async () => {
    // Kept in a WeakMap, 10-15% of what serving allocated was promoted; on the events, ~0.1%.
    const batches = await serving("batches");
    expect(batches.allocated).toBeGreaterThan(200 * 1024 * 1024);
    expect(batches.promoted).toBeLessThan(batches.allocated / 50);
  });

  it("an object slot's value is hidden from JSON, keys, spreads and deep equality", () => {
    const slot = new ObjectSlot<{ seq: number }, string>("frame");
    const event = { seq: 1 };
    expect(slot.get(event)).toBeUndefined();
    slot.set(event, "first");
    slot.set(event, "second");
    expect(slot.get(event)).toBe("second");
    expect(JSON.stringify(event)).toBe('{"seq":1}');
    expect(Object.keys(event)).toEqual(["seq"]);
    expect({ ...event }).toStrictEqual({ seq: 1 });
    expect(slot.get({ ...event })).toBeUndefined();
    expect(event).toStrictEqual({ seq: 1 });
  });

  it("an object slot keeps nothing on an object that takes no new properties", () => {
    const slot = new ObjectSlot<{ seq: number }, string>("frame");
    const frozen = Object.freeze({ seq: 1 });
    slot.set(frozen, "frame");
    expect(slot.get(frozen)).toBeUndefined();
  });
});
