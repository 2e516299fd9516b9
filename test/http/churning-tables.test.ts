import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

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
  it("a long-lived Map filled and emptied by every group of commits makes full collections (the fact avoided below)", async () => {
    expect(await fullCollections("map")).toBeGreaterThanOrEqual(4);
  });

  it("observing commits until their events are published makes no full collection", async () => {
    // Kept in a Map by run id (the code before), 4-8 full collections here.
    expect(await fullCollections("seams")).toBeLessThanOrEqual(1);
  });

  it("event streams sending frames every turn make no full collection", async () => {
    // Due connections kept in a Set (the code before), 4-14 full collections here.
    expect(await fullCollections("streams")).toBeLessThanOrEqual(1);
  });
});
