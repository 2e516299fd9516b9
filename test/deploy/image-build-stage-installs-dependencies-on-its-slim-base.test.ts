/**
 * The Dockerfile's build stage installs the dependencies with the tools its base has.
 *
 * The build stage is `FROM node:24-bookworm-slim`: Node, npm and Yarn on debian:bookworm-slim,
 * without Python, make or a C/C++ compiler. better-sqlite3 ships a binding.gyp and no install
 * script, and for such a package npm runs `node-gyp rebuild` when it installs it: gyp is a Python
 * program, so a plain `npm ci` stops there (`gyp ERR! find Python`) and the image is never
 * built. better-sqlite3 needs no compiling: its prebuilds/ hold Node-API binaries it loads
 * itself. The build stage's install runs no install scripts.
 *
 * The rehearsal, without a Docker engine: a project holding better-sqlite3 and its dependencies
 * as package-lock.json locks them (the whole install takes ~40 s; this one a few), installed
 * with the build stage's npm command as the Dockerfile writes it, by /bin/sh, with a PATH
 * holding this machine's programs minus those the slim base lacks (python*, make, the C and
 * C++ compilers) unless the stage apt-get installs them. npm takes the packages from this
 * machine's npm cache, offline: a test sends nothing out. Then better-sqlite3 must load and
 * answer a query. The other locked packages that run code at install are listed below, each
 * with what makes the build stage's install safe for it.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { dockerfileStages, runCommands, type Stage } from "../helpers/dockerfile.js";
import { tempDir } from "../helpers/temp-dir.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));

interface LockEntry {
  version?: string;
  dev?: boolean;
  hasInstallScript?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
  packages: Record<string, LockEntry>;
};

/**
 * The locked packages whose installation runs code of theirs: an install script (the lock's
 * hasInstallScript), or node-gyp for a binding.gyp (npm runs `node-gyp rebuild` for a package
 * with one and no install script: the package's files say so, not the lock), each with what
 * makes the build stage's install, which runs none of that code, safe for it.
 */
const RUNS_CODE_AT_INSTALL: Record<string, string> = {
  "better-sqlite3":
    "binding.gyp, for which npm would run node-gyp (Python, make, a C++ compiler: none on the slim base); " +
    "its prebuilds/ hold Node-API binaries for linux x64 and arm64 that it loads itself (installed and loaded below)",
  esbuild:
    "postinstall `node install.js` only checks the binary of its @esbuild/<platform> optional dependency " +
    "(a package npm installs without scripts) and hard-links it over bin/esbuild to skip a JS shim; " +
    "esbuild finds that binary itself without it (lib/main.js resolves @esbuild/<platform>). It is a dev " +
    "dependency (tsx's; vite's optional peer, unused by the console's `vite build`) that `npm prune --omit=dev` drops",
};

/** Programs node-gyp needs that node:*-bookworm-slim lacks, by the Debian package a stage could apt-get install. */
const MISSING_ON_SLIM: Record<string, string[]> = {
  python3: ["python3"],
  "python-is-python3": ["python"],
  make: ["make"],
  gcc: ["gcc", "cc", "cpp"],
  "g++": ["g++", "c++"],
  "build-essential": ["make", "gcc", "cc", "cpp", "g++", "c++"],
};
const isMissingOnSlim = (name: string) =>
  /^python/.test(name) ||
  ["make", "gmake", "gcc", "g++", "cc", "c++", "cpp", "clang", "clang++"].includes(name) ||
  /^(x86_64|aarch64)-linux-gnu-(gcc|g\+\+|cpp)/.test(name);

/** `path`'s entry and, recursively, those of its dependencies, as npm resolves them in the lock. */
function lockedWithDependencies(path: string, into: Record<string, LockEntry> = {}): Record<string, LockEntry> {
  const entry = lock.packages[path];
  if (!entry) throw new Error(`package-lock.json has no ${path}`);
  into[path] = entry;
  for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
    const nested = `${path}/node_modules/${name}`;
    const resolved = lock.packages[nested] ? nested : `node_modules/${name}`;
    if (!into[resolved]) lockedWithDependencies(resolved, into);
  }
  return into;
}

describe("the Dockerfile's build stage on its node:*-bookworm-slim base", () => {
  const temp = tempDir("agent-build-stage-");
  afterAll(() => temp.cleanup());
  const build = dockerfileStages().find((stage) => stage.name === "build") as Stage;

  it("installs better-sqlite3 with the stage's npm command without Python, make or a compiler, and it loads", async () => {
    expect(build.from).toMatch(/^node:\d+-bookworm-slim\b/);
    const install = runCommands(build).find((command) => /^npm (ci|install)\b/.test(command));
    if (!install) throw new Error("the build stage no longer installs the dependencies with npm");

    // The slim base's programs: this machine's, minus the build tools it lacks, plus what the stage installs.
    const aptInstalled = runCommands(build).flatMap((command) =>
      /^apt-get\s+install\b/.test(command) ? command.split(/\s+/).slice(2) : [],
    );
    const installed = new Set(aptInstalled.flatMap((pkg) => MISSING_ON_SLIM[pkg] ?? []));
    const bin = join(temp.path, "bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, "node"));
    for (const from of [dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"]) {
      if (!existsSync(from)) continue;
      for (const name of readdirSync(from)) {
        if ((isMissingOnSlim(name) && !installed.has(name)) || existsSync(join(bin, name))) continue;
        symlinkSync(join(from, name), join(bin, name));
      }
    }

    // better-sqlite3 and its dependencies, as the repository's lock has them.
    const app = join(temp.path, "app");
    mkdirSync(app);
    const range = lock.packages[""]?.dependencies?.["better-sqlite3"];
    if (!range) throw new Error("package.json no longer depends on better-sqlite3");
    const project = {
      name: "build-stage-rehearsal",
      version: "1.0.0",
      private: true,
      dependencies: { "better-sqlite3": range },
    };
    writeFileSync(join(app, "package.json"), JSON.stringify(project));
    const packages = { "": project, ...lockedWithDependencies("node_modules/better-sqlite3") };
    expect(Object.keys(packages)).toContain("node_modules/node-addon-api");
    writeFileSync(
      join(app, "package-lock.json"),
      JSON.stringify({ name: project.name, version: project.version, lockfileVersion: 3, requires: true, packages }),
    );
    const npmCache = process.env.npm_config_cache ?? join(homedir(), ".npm");
    const env: Record<string, string> = {
      PATH: bin,
      HOME: join(temp.path, "home"),
      npm_config_cache: npmCache,
      npm_config_offline: "true",
      npm_config_logs_dir: join(temp.path, "npm-logs"),
      npm_config_update_notifier: "false",
      // Node's headers for node-gyp, which a docker build would download: not what may fail here.
      ...(process.env.npm_config_nodedir ? { npm_config_nodedir: process.env.npm_config_nodedir } : {}),
    };
    const result = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn("/bin/sh", ["-c", install], { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      for (const stream of [child.stdout, child.stderr]) {
        stream.setEncoding("utf8").on("data", (d: string) => {
          output += d;
        });
      }
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, output }));
    });
    const tail = result.output.split("\n").slice(-30).join("\n");
    // Not the bug: a package missing from this machine's npm cache (the test installs offline).
    expect(result.output, `this machine's npm cache (${npmCache}) lacks a package:\n${tail}`).not.toContain(
      "ENOTCACHED",
    );
    expect(result.code, `\`${install}\` without python3, make or a compiler:\n${tail}`).toBe(0);
    const loaded = await run(
      process.execPath,
      [
        "-e",
        "const D = require('better-sqlite3'); console.log(new D(':memory:').prepare('select 40 + 2 as x').get().x)",
      ],
      { cwd: app, env: { PATH: bin } },
    );
    expect(loaded.stdout).toBe("42\n");
    // The image is built for linux x64 or arm64: the package holds both binaries.
    const prebuilds = readdirSync(join(app, "node_modules/better-sqlite3/prebuilds"));
    expect(prebuilds).toEqual(expect.arrayContaining(["linux-x64.node", "linux-arm64.node"]));
  });

  it("no other locked package runs code at install that the build stage leaves out (each says why that is safe)", () => {
    const runsCode = new Set<string>();
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === "") continue;
      const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
      if (entry.hasInstallScript || existsSync(join(root, path, "binding.gyp"))) runsCode.add(name);
    }
    expect([...runsCode].sort()).toEqual(Object.keys(RUNS_CODE_AT_INSTALL).sort());
    // esbuild's binary is a package of its own, installed with no script, and esbuild stays out of the image.
    const esbuild = lock.packages["node_modules/esbuild"] as LockEntry;
    expect(esbuild.dev).toBe(true);
    for (const platform of ["@esbuild/linux-x64", "@esbuild/linux-arm64"]) {
      expect(Object.keys(esbuild.optionalDependencies ?? {})).toContain(platform);
      expect(lock.packages[`node_modules/${platform}`]).toMatchObject({ dev: true });
      expect(lock.packages[`node_modules/${platform}`]?.hasInstallScript).toBeUndefined();
    }
  });
});
