import { rm } from "node:fs/promises";

// Paths a test made and nobody else removes, removed by the hooks test/setup.ts registers in
// every test file. A helper module cannot register those hooks itself: the suite runs with
// `isolate: false`, so a module is evaluated once per worker and its top-level hooks would
// belong to the first test file that imported it only.
const afterTest: string[] = [];
const afterFile: string[] = [];

/** Removes `path` (recursively, if it still exists) when the current test ends. */
export function removeAfterTest(path: string): void {
  afterTest.push(path);
}

/** Removes `path` (recursively, if it still exists) when the current test file ends. */
export function removeAfterFile(path: string): void {
  afterFile.push(path);
}

/** Removes what was noted for the end of a test (`test`) or of the file (`file`). */
export async function removeLeftovers(when: "test" | "file"): Promise<void> {
  const paths = (when === "test" ? afterTest : afterFile).splice(0);
  await Promise.all(paths.map((path) => rm(path, { recursive: true, force: true })));
}
