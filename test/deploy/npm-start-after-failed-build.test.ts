/**
 * `npm start` builds dist/ when it is older than the sources. A build with type errors must leave
 * nothing that looks fresh (tsconfig.json: noEmitOnError), else the next `npm start` runs the
 * unchecked output; and it exits 1, not tsc's own code (2 is the server's "configuration error").
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { tempDir } from "../helpers/temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

it("npm start over sources with type errors exits 1 each time and never runs what tsc would have written", () => {
  const temp = tempDir("npm-start-failed-build-");
  cleanups.push(temp.cleanup);
  // The parts of a checkout start.mjs reads, with the real tsconfig.json and TypeScript, and a
  // server whose source does not type-check.
  const app = temp.path;
  mkdirSync(join(app, "scripts"));
  mkdirSync(join(app, "src"));
  for (const file of ["start.mjs", "node-version.mjs"]) {
    copyFileSync(join(root, "scripts", file), join(app, "scripts", file));
  }
  for (const file of ["package.json", "tsconfig.json"]) copyFileSync(join(root, file), join(app, file));
  symlinkSync(join(root, "node_modules"), join(app, "node_modules"));
  writeFileSync(
    join(app, "src", "server.ts"),
    'const port: number = "3000";\nconsole.log("unchecked server", port);\n',
  );

  const start = () =>
    spawnSync(process.execPath, [join(app, "scripts", "start.mjs")], { cwd: app, encoding: "utf8", timeout: 60_000 });
  for (const attempt of [1, 2]) {
    const result = start();
    expect({ attempt, status: result.status, ran: result.stdout.includes("unchecked server") }).toEqual({
      attempt,
      status: 1,
      ran: false,
    });
    expect(`${result.stdout}${result.stderr}`).toMatch(/TS2322/);
  }
  expect(existsSync(join(app, "dist", "src", "server.js"))).toBe(false);
});
