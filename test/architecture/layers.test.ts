import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? filesUnder(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** The project folders a file imports from (its relative imports, resolved), e.g. "src/store". */
function importedFolders(file: string): string[] {
  const source = readFileSync(join(root, file), "utf8");
  const specifiers = [...source.matchAll(/(?:import|export)[^"']*?from\s+["']([^"']+)["']/g)].map((m) => m[1] ?? "");
  return specifiers
    .filter((s) => s.startsWith("."))
    .map((s) => relative(root, resolve(root, dirname(file), s)))
    .map((path) => (path.startsWith("routes/") ? "routes" : path.split("/").slice(0, 2).join("/")));
}

/** Tables any layer may keep its entries in (they import nothing of the project). */
const TABLES = ["src/string-table.js", "src/lru-table.js"];

/** Functions of one line any layer may use (they import nothing of the project). */
const LEAVES = ["src/message-of.js", "src/utf16.js"];

/** Each layer and the folders it may import from (besides itself and packages). */
const LAYERS: Record<string, string[]> = {
  "src/agent": [...LEAVES],
  "src/domain": ["src/agent", ...LEAVES],
  "src/store": ["src/agent", "src/domain", ...TABLES, ...LEAVES],
  "src/observability": [
    "src/agent",
    "src/domain",
    "src/store",
    "src/runs",
    "src/model",
    "src/config.js",
    "src/deadline.js",
    "src/object-slot.js",
    ...TABLES,
    ...LEAVES,
  ],
};

describe("the layers of the code", () => {
  for (const [layer, allowed] of Object.entries(LAYERS)) {
    it(`${layer} imports only from ${allowed.length ? allowed.join(", ") : "itself"}`, () => {
      const offending = filesUnder(layer).flatMap((file) =>
        importedFolders(file)
          .filter((folder) => folder !== layer && !allowed.includes(folder))
          .map((folder) => `${file} -> ${folder}`),
      );
      expect(offending).toEqual([]);
    });
  }

  it("the tables and the leaves import nothing of the project", () => {
    expect(
      [...TABLES, ...LEAVES]
        .flatMap((file) => importedFolders(file.replace(/\.js$/, ".ts")))
        .filter((f) => !TABLES.includes(f)),
    ).toEqual([]);
  });

  it("the entry (src/server.ts) loads the server only once the configuration is valid: its static imports are the checks'", () => {
    expect(importedFolders("src/server.ts").sort()).toEqual([
      "src/config-exit.js",
      "src/config.js",
      "src/exposure.js",
      "src/inherited-descriptors.js",
      "src/logger.js",
    ]);
    expect(readFileSync(join(root, "src/server.ts"), "utf8")).toContain('await import("./serve.js")');
  });

  it("the rule checker sees imports (src/runs imports src/store)", () => {
    expect(filesUnder("src/runs").flatMap(importedFolders)).toContain("src/store");
  });

  it("the loop and the runs know nothing of metrics or traces (they are fed from compose.ts)", () => {
    const offending = [...filesUnder("src/agent"), ...filesUnder("src/runs")].filter((file) =>
      /from "(prom-client|@opentelemetry\/[^"]+)"|observability\//.test(readFileSync(join(root, file), "utf8")),
    );
    expect(offending).toEqual([]);
  });

  it("outside src/store nothing names a SQLite error code or reaches the database handle", () => {
    const offending = [...filesUnder("src"), ...filesUnder("routes")]
      .filter((file) => !file.startsWith("src/store/"))
      .filter((file) => /SQLITE_|\bstore\.db\b|better-sqlite3/.test(readFileSync(join(root, file), "utf8")));
    expect(offending).toEqual([]);
  });

  it("no file in src/ is over 300 lines", () => {
    const long = filesUnder("src")
      .map((file) => ({ file, lines: readFileSync(join(root, file), "utf8").split("\n").length - 1 }))
      .filter(({ lines }) => lines > 300);
    expect(long).toEqual([]);
  });
});
