/**
 * The Dockerfile's COPY instructions against .dockerignore: every file a COPY takes from the
 * build context must reach it, or `docker build` fails with `"/<path>": not found` (no Docker
 * engine runs here, so the context is computed with Docker's rules: test/helpers/dockerignore.ts).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isExcluded, parseDockerignore } from "../helpers/dockerignore.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The sources of every COPY (any stage) that reads the build context, not an earlier stage. */
function contextCopySources(dockerfile: string): string[] {
  const sources: string[] = [];
  const lines = dockerfile
    .replace(/\\\r?\n/g, " ")
    .split(/\r?\n/)
    .map((l) => l.trim());
  for (const line of lines) {
    const m = /^(?:COPY|ADD)\s+(.*)$/i.exec(line);
    if (!m) continue;
    let args = (m[1] as string).trim();
    const flags: string[] = [];
    while (args.startsWith("--")) {
      const [flag = "", rest = ""] = args.split(/\s+(.*)/s);
      flags.push(flag);
      args = rest.trim();
    }
    if (flags.some((f) => f.startsWith("--from="))) continue;
    const parts: string[] = args.startsWith("[") ? JSON.parse(args) : args.split(/\s+/);
    sources.push(...parts.slice(0, -1).map((s) => s.replace(/^\.\//, "").replace(/\/$/, "")));
  }
  return sources;
}

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
    const sources = contextCopySources(readFileSync(join(root, "Dockerfile"), "utf8"));
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
