#!/usr/bin/env node
// Drops what a production image does not run from an installed app directory (default: cwd):
// better-sqlite3's sources, build tree and the prebuilt binaries of other platforms (the one
// this machine loads stays), and every source map under node_modules/ and dist/.
// The Dockerfile runs it after `npm prune --omit=dev`; test/deploy/production-start.test.ts
// runs it on its rehearsal of the runtime stage. Prints how many bytes it removed.
import { existsSync, lstatSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const app = resolve(process.argv[2] ?? ".");
let removed = 0;

function size(path) {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const name of readdirSync(path)) total += size(join(path, name));
  return total;
}

function remove(path) {
  if (!existsSync(path)) return;
  removed += size(path);
  rmSync(path, { recursive: true, force: true });
}

function removeSourceMaps(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) removeSourceMaps(path);
    else if (entry.name.endsWith(".map")) remove(path);
  }
}

const sqlite = join(app, "node_modules/better-sqlite3");
if (existsSync(sqlite)) {
  const require = createRequire(join(sqlite, "package.json"));
  const prebuilt = require("./lib/binding.js").getPrebuildPath();
  const compiled = join(sqlite, "build/Release/better_sqlite3.node");
  if (!prebuilt && !existsSync(compiled)) {
    console.error("slim-image: better-sqlite3 has no binary for this platform; nothing removed");
    process.exit(1);
  }
  for (const name of ["deps", "src", "binding.gyp"]) remove(join(sqlite, name));
  const prebuilds = join(sqlite, "prebuilds");
  if (existsSync(prebuilds)) {
    for (const name of readdirSync(prebuilds)) {
      const path = join(prebuilds, name);
      if (existsSync(compiled) || path !== prebuilt) remove(path);
    }
  }
  const build = join(sqlite, "build");
  if (existsSync(build)) {
    for (const name of readdirSync(build)) if (name !== "Release") remove(join(build, name));
    const release = join(build, "Release");
    if (existsSync(release)) {
      for (const name of readdirSync(release)) if (name !== "better_sqlite3.node") remove(join(release, name));
    }
  }
}
removeSourceMaps(join(app, "node_modules"));
removeSourceMaps(join(app, "dist"));
console.log(`slim-image: removed ${(removed / 1048576).toFixed(1)} MiB`);
