import { execFileSync } from "node:child_process";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { specPath } from "../helpers/openapi-validator.js";
import { tempDir } from "../helpers/temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const dir = tempDir("readme-flow-");
afterAll(() => dir.cleanup());

/** Runs a command; its output (stdout and stderr) whether it succeeds or fails. */
function run(args: string[]): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync(process.execPath, args, { cwd: root, encoding: "utf8", stdio: "pipe" }) };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

it("a client generated from openapi.yaml (openapi-typescript + openapi-fetch) type-checks the README flow without casts", () => {
  const generated = run([
    "--import",
    join(root, "test/helpers/openapi-typescript-hook.mjs"),
    join(root, "node_modules/openapi-typescript/bin/cli.js"),
    specPath,
    "--output",
    join(dir.path, "api.d.ts"),
  ]);
  expect(generated.ok, generated.output).toBe(true);
  const types = readFileSync(join(dir.path, "api.d.ts"), "utf8");
  // Free-form objects allow properties; streams are strings, not arrays of frames.
  expect(types).not.toMatch(/(metadata|inputSchema)\??: Record<string, never>/);
  expect(types).not.toContain("SseFrame");

  copyFileSync(join(root, "test/fixtures/readme-flow/flow.ts"), join(dir.path, "flow.ts"));
  writeFileSync(
    join(dir.path, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
        lib: ["ES2022", "DOM"],
        paths: { "openapi-fetch": [join(root, "node_modules/openapi-fetch")] },
      },
      files: ["flow.ts"],
    }),
  );
  const checked = run([join(root, "node_modules/typescript/bin/tsc"), "-p", join(dir.path, "tsconfig.json")]);
  expect(checked.output).toBe("");
  expect(checked.ok).toBe(true);
});
