import { closeSync, openSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { O_DIR } from "../../src/tools/open-dir.js";
import { slicedSort } from "../../src/tools/sliced-sort.js";
import { walk } from "../../src/tools/walk.js";
import { makeSandbox, writeTree } from "./helpers.js";

const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

async function walkOf(
  workspace: string,
  options: { maxListed?: number; signal?: AbortSignal; maxDepth?: number; countTooDeep?: boolean } = {},
) {
  const fd = openSync(workspace, O_DIR);
  try {
    const walked = walk({ start: { fd, path: workspace }, relative: ".", maxDepth: 64, ...options });
    const paths: string[] = [];
    for await (const entry of walked) paths.push(entry.relative);
    return { paths, cut: walked.cut, tooDeep: walked.tooDeep };
  } finally {
    closeSync(fd);
  }
}

describe("walk", () => {
  it("ends with cut too_many_entries, having closed what it opened, when its directories hold more than maxListed entries", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a/1": "", "a/2": "", "b/1": "", "b/2": "", "b/3": "" });
    expect(await walkOf(workspace)).toEqual({
      paths: ["a", "a/1", "a/2", "b", "b/1", "b/2", "b/3"],
      cut: null,
      tooDeep: 0,
    });
    const descriptors = readdirSync("/proc/self/fd").length;
    // 2 (root) + 2 (a) fit; b's 3 would pass 6: b is reported but not listed.
    expect(await walkOf(workspace, { maxListed: 6 })).toEqual({
      paths: ["a", "a/1", "a/2", "b"],
      cut: "too_many_entries",
      tooDeep: 0,
    });
    expect(readdirSync("/proc/self/fd").length).toBe(descriptors);
  });

  it("ends with cut aborted, before its next entry, once its signal fires", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a/1": "", "b/1": "" });
    expect(await walkOf(workspace, { signal: AbortSignal.abort() })).toEqual({ paths: [], cut: "aborted", tooDeep: 0 });
  });

  it("reports the directories at maxDepth without entering them, and counts them in tooDeep when asked", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a/b/c/1": "", "a/b/2": "", "a/3": "", "d/4": "", "e/f/5": "" });
    const paths = ["a", "a/3", "a/b", "d", "d/4", "e", "e/f"];
    expect(await walkOf(workspace, { maxDepth: 2, countTooDeep: true })).toEqual({ paths, cut: null, tooDeep: 2 });
    expect(await walkOf(workspace, { maxDepth: 2 })).toEqual({ paths, cut: null, tooDeep: 0 });
  });
});

describe("slicedSort", () => {
  it("sorts as Array.prototype.sort does, keeping equal items in their order", async () => {
    for (const n of [0, 1, 1023, 1024, 1025, 5000]) {
      const items = Array.from({ length: n }, (_, i) => ({ key: (i * 7919) % 101, i }));
      const compare = (a: { key: number }, b: { key: number }) => a.key - b.key;
      expect(await slicedSort(items.slice(), compare, 10)).toEqual(items.slice().sort(compare));
    }
  });

  it("lets the event loop turn while sorting 100,000 names that share a 249-character prefix", async () => {
    const names = Array.from({ length: 100_000 }, (_, i) => ({
      name: `f${String((i * 7919) % 100_003).padStart(249, "0")}`,
    }));
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const sorted = await slicedSort(names.slice(), byName, 10);
    clearInterval(ticker);
    expect(sorted).toEqual(names.slice().sort(byName));
    expect(ticks).toBeGreaterThan(3);
  });
});
