/**
 * The Dockerfile's COPY instructions against .dockerignore: every file a COPY takes from the
 * build context must reach it, or `docker build` fails with `"/<path>": not found` (no Docker
 * engine runs here, so the context is computed with Docker's rules: test/helpers/dockerignore.ts).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { dockerfileStages } from "../helpers/dockerfile.js";
import { isExcluded, parseDockerignore } from "../helpers/dockerignore.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** `path` and, for a directory, every file under it, relative to the repository. */
function filesOf(path: string): string[] {
  if (!statSync(join(root, path)).isDirectory()) return [path];
  return readdirSync(join(root, path)).flatMap((name) => filesOf(`${path}/${name}`));
}

describe("the Docker build context (.dockerignore)", () => {
  it("follows Docker's rules: patterns in order, ! re-includes, a match on a parent counts, the last match wins", () => {
    const rules = parseDockerignore("# comment\n*\n!src/\nsrc/**/*.map\n!keep/one.txt\n/docs\n");
    expect(isExcluded(rules, "console/main.ts")).toBe(true);
    expect(isExcluded(rules, "src/a/b.ts")).toBe(false);
    expect(isExcluded(rules, "src/a/b.js.map")).toBe(true);
    expect(isExcluded(rules, "src/b.js.map")).toBe(true);
    expect(isExcluded(rules, "keep/one.txt")).toBe(false);
    expect(isExcluded(rules, "keep/two.txt")).toBe(true);
    expect(isExcluded(parseDockerignore("dist\n"), "dist/x/y.js")).toBe(true);
    expect(isExcluded(parseDockerignore("dist\n"), "distant.txt")).toBe(false);
  });

  it("holds every file the Dockerfile copies from the context", () => {
    const rules = parseDockerignore(readFileSync(join(root, ".dockerignore"), "utf8"));
    // Every COPY and ADD of any stage that reads the build context, not an earlier stage.
    const sources = dockerfileStages().flatMap((stage) => stage.copies);
    // The build stage's and the runtime stage's own files.
    expect(sources).toEqual(expect.arrayContaining(["package.json", "src", "console", "migrations"]));
    const missing: string[] = [];
    for (const source of sources) {
      if (!existsSync(join(root, source))) missing.push(`${source} (not in the repository)`);
      else missing.push(...filesOf(source).filter((file) => isExcluded(rules, file)));
    }
    expect(missing).toEqual([]);
  });
});
