import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { LruTable } from "../../src/lru-table.js";
import { ObjectSlot } from "../../src/object-slot.js";
import { StringTable } from "../../src/string-table.js";

const run = promisify(execFile);
const fixture = fileURLToPath(new URL("../fixtures/gc/young-caches.mjs", import.meta.url));
const churnFixture = fileURLToPath(new URL("../fixtures/gc/table-churn.mjs", import.meta.url));

/** The bytes V8's young collections promoted while `runs` ran through an old table of `kind`. */
async function churned(kind: string, runs: number): Promise<number> {
  const args = ["--trace-gc-nvp", "--expose-gc", churnFixture, kind, String(runs)];
  const { stdout } = await run(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 });
  expect(stdout).toContain("cpu_ms=");
  let promoted = 0;
  for (const line of stdout.split("\n")) {
    if (/ gc=s /.test(line)) promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? Number.NaN);
  }
  return promoted;
}

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

describe("long-lived tables whose entries come and go", () => {
  it("a StringTable lets a deleted run's objects die in young collections, where an old Map's leftovers make them old", async () => {
    // 40,000 runs of ~10 KB each: through the Map, ~6 KB of each run was promoted; through
    // the StringTable, next to nothing.
    const [table, map] = [await churned("string-table", 40_000), await churned("map", 40_000)];
    expect(map).toBeGreaterThan(40_000 * 1024);
    expect(table).toBeLessThan(map / 20);
  });

  it("a StringTable holds values by key as a Map does, any string a key, in insertion order", () => {
    const table = new StringTable<number>();
    expect(table.size).toBe(0);
    expect(table.keys()).toEqual([]);
    for (const [i, key] of ["run_b", "__proto__", "constructor", "run_a", "hasOwnProperty"].entries())
      table.set(key, i);
    expect(table.size).toBe(5);
    expect(table.get("__proto__")).toBe(1);
    expect(table.has("constructor")).toBe(true);
    expect(table.has("toString")).toBe(false);
    expect(table.get("toString")).toBeUndefined();
    table.set("run_b", 10);
    expect(table.size).toBe(5);
    expect(table.delete("constructor")).toBe(true);
    expect(table.delete("constructor")).toBe(false);
    expect(table.keys()).toEqual(["run_b", "__proto__", "run_a", "hasOwnProperty"]);
    expect(table.values()).toEqual([10, 1, 3, 4]);
    table.clear();
    expect(table.size).toBe(0);
    expect(table.values()).toEqual([]);
  });

  it("an LruTable drops the least recently used past its bound, keeps nothing larger than it, and a peek uses nothing", () => {
    const table = new LruTable<string>(10);
    table.set("a", "A", 4);
    table.set("b", "B", 4);
    expect(table.get("a")).toBe("A");
    expect(table.peek("b")).toBe("B");
    table.set("c", "C", 4);
    // b was used least recently (the peek did not count).
    expect([table.peek("a"), table.peek("b"), table.peek("c")]).toEqual(["A", undefined, "C"]);
    expect([table.size, table.cost]).toEqual([2, 8]);
    table.set("a", "A2", 2);
    expect(table.cost).toBe(6);
    table.set("d", "D", 11);
    expect(table.peek("d")).toBeUndefined();
    table.set("c", "C2", 11);
    expect(table.peek("c")).toBeUndefined();
    expect([table.size, table.cost]).toEqual([1, 2]);
    expect(table.delete("a")).toBe(true);
    expect(table.delete("a")).toBe(false);
    expect([table.size, table.cost]).toEqual([0, 0]);
    table.set("e", "E", 10);
    expect(table.get("e")).toBe("E");
  });
});
