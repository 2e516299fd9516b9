#!/usr/bin/env node
// `npm start`: refuses a Node.js older than package.json's engines (exit 1, saying so),
// builds dist/ when it is missing or older than the sources, then runs the server in this
// process's place (signals reach it directly). A failed build exits 1 (2 is the server's
// "configuration error") and leaves dist/ as it was (tsconfig.json: noEmitOnError), so the
// next start builds again instead of running unchecked output.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { currentNodeProblem } from "./node-version.mjs";

// A file path, not the URL's percent-encoded pathname (a checkout under `My Projects/`).
const root = fileURLToPath(new URL("..", import.meta.url));
const nodeProblem = currentNodeProblem(join(root, "package.json"));
if (nodeProblem) {
  console.error(nodeProblem);
  process.exit(1);
}
const entry = join(root, "dist/src/server.js");

function newestMtime(dir) {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function buildFailed(what) {
  console.error(`building ${what} failed (see above): nothing was started`);
  process.exit(1);
}

const sources = Math.max(
  newestMtime(join(root, "src")),
  newestMtime(join(root, "routes")),
  newestMtime(join(root, "migrations")),
);
const built = existsSync(entry) ? statSync(entry).mtimeMs : 0;
if (built < sources) {
  const tsc = join(root, "node_modules/typescript/bin/tsc");
  if (!existsSync(tsc)) {
    console.error(
      "dist/ is missing or stale and TypeScript is not installed: run `npm ci` (with dev dependencies) first",
    );
    process.exit(1);
  }
  console.error("building dist/ ...");
  const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.json")], { stdio: "inherit" });
  if (result.status !== 0) buildFailed("dist/");
}
// The console (dist/console), built by vite from console/ when missing or older than its sources.
const consoleIndex = join(root, "dist/console/index.html");
const consoleBuilt = existsSync(consoleIndex) ? statSync(consoleIndex).mtimeMs : 0;
if (consoleBuilt < newestMtime(join(root, "console"))) {
  const vite = join(root, "node_modules/vite/bin/vite.js");
  if (existsSync(vite)) {
    console.error("building dist/console ...");
    const result = spawnSync(process.execPath, [vite, "build", "--config", join(root, "console/vite.config.ts")], {
      stdio: "inherit",
    });
    if (result.status !== 0) buildFailed("dist/console");
  } else if (!consoleBuilt) {
    console.error(
      "dist/console is missing and vite is not installed: the console at / answers 503 until `npm run build`",
    );
  }
}
await import(pathToFileURL(entry).href);
