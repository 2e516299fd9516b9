import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const fixture = fileURLToPath(new URL("../fixtures/gc/churning-tables.mjs", import.meta.url));

/** V8's full collections while the fixture drove `mode` with 60 runs a group. */
async function fullCollections(mode: string): Promise<number> {
  const { stdout } = await run(process.execPath, ["--trace-gc-nvp", fixture, mode], {
    env: { ...process.env, RUNS: "60" },
    maxBuffer: 64 * 1024 * 1024,
  });
  expect(stdout).toContain("drove 20000 groups");
  return stdout.split("\n").filter((line) => / gc=mc /.test(line)).length;
}

describe("what tracks writes and frames in flight makes no old garbage", () => {
  // The three drives run at once, each in its own process.
  const full: Record<string, number> = {};
  beforeAll(async () => {
    const modes = ["map", "seams", "streams"];
    const counts = await Promise.all(modes.map(fullCollections));
    modes.forEach((mode, i) => {
      full[mode] = counts[i] as number;
    });
  }, 60_000);

  // The V8 behaviour the two checks below are about: without it they would check nothing.
  it("a long-lived Map filled and emptied by every group of commits makes full collections (the fact avoided below)", () => {
    expect(full.map).toBeGreaterThanOrEqual(4);
  });

  it("observing commits until their events are published makes no full collection", () => {
    // Commit times kept in a Map by run id: as many full collections as the map case.
    expect(full.seams).toBeLessThanOrEqual(1);
  });

  it("event streams sending frames every turn make no full collection", () => {
    // Due connections kept in a Set: as many full collections as the map case.
    expect(full.streams).toBeLessThanOrEqual(1);
  });
});
