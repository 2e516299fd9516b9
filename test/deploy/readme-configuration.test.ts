/**
 * The README's configuration table names exactly the variables the server's configuration
 * reads (loadConfig, src/config.ts and the model's src/model/config.ts): a variable mentioned
 * only in prose, or a row for one nothing reads, fails.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";

/** Every variable name loadConfig looks up, recorded by an environment that answers nothing. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get(_, name) {
      if (typeof name === "string") read.add(name);
      return undefined;
    },
  });
  try {
    loadConfig(env, { openFileLimit: 1024 });
  } catch {
    // An empty environment may be refused (no model); what it read is what counts.
  }
  return read;
}

it("the README's configuration table has a row for each variable the configuration reads, and no other", () => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const start = readme.indexOf("\n## Configuration\n");
  const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
  const rows = [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` +\|/gm)].map((m) => m[1] as string);
  const read = [...variablesRead()].filter((name) => /^[A-Z][A-Z0-9_]*$/.test(name));
  expect(read).toEqual(expect.arrayContaining(["PORT", "OPENAI_API_KEY", "WEBHOOK_RETRY_BASE_MS"]));
  expect(new Set(rows).size).toBe(rows.length);
  expect({ missingFromTable: read.filter((name) => !rows.includes(name)) }).toEqual({ missingFromTable: [] });
  expect({ readByNothing: rows.filter((name) => !read.includes(name)) }).toEqual({ readByNothing: [] });
});
