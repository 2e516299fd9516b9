/**
 * The Dockerfile's runtime stage rehearsed without a Docker engine, as the image runs.
 *
 * In a temp dir: the image's /app, holding what the stage copies (package.json,
 * package-lock.json, dist/, migrations/, bin/, openapi.yaml; read from the Dockerfile) and the
 * production dependencies as the build stage leaves them, owned by the user running the tests
 * (root here, as in the image); its volumes /data and /workspaces and the node user's HOME
 * (/home/node), owned by the image's user; its /usr/local/bin, holding node and the links the
 * stage's `RUN ln -s` make. Processes run in /app with exactly the environment given, as the
 * image's user (`USER node`: uid 1000 in node's images) through setpriv when the tests run as
 * root; otherwise as the user running the tests, who then owns /app (what depends on /app being
 * someone else's is rehearsed only as root).
 *
 * Production dependencies: the build stage runs `npm ci`, `npm run build`, then
 * `npm prune --omit=dev` and scripts/slim-image.mjs. Here the checkout's node_modules (the
 * state after `npm ci`) is copied and the same prune and slimming run over it, which takes
 * seconds; dist/ is the checkout's when it is newer than the sources, else compiled here.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { dockerfileStages, runCommands, type Stage } from "./dockerfile.js";
import { tempDir } from "./temp-dir.js";

const execFileAsync = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));

/** The image's `node` user (node's official images: uid and gid 1000). */
export const IMAGE_UID = 1000;
/** Whether processes run as the image's user (setpriv needs root), not as the tests' own. */
export const asImageUser = process.getuid?.() === 0;
/** The PATH of node's images, after the rehearsal's /usr/local/bin. */
const IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface RuntimeRehearsal {
  /** The Dockerfile's runtime (last) stage. */
  stage: Stage;
  /** The temp dir holding everything; the image's /app, /data, /workspaces, /home/node, /usr/local/bin. */
  dir: string;
  app: string;
  data: string;
  workspaces: string;
  home: string;
  binDir: string;
  /** The image's environment (PATH, HOME, the stage's ENV), then `extra`. */
  env(extra?: Record<string, string>): Record<string, string>;
  /** `argv` in /app as the image's user, with exactly `env`. */
  spawn(argv: string[], env: Record<string, string>): ChildProcess;
  /** `argv` as `spawn` runs it, to its end (killed after `timeoutMs`). */
  run(
    argv: string[],
    env: Record<string, string>,
    timeoutMs?: number,
  ): Promise<{ code: number | null; stdout: string; stderr: string }>;
  cleanup(): void;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** dist/ into `app`: the checkout's when it is newer than the sources, else compiled there. */
async function provideDist(app: string): Promise<void> {
  const built = join(root, "dist/src/server.js");
  const sources = Math.max(newestMtime(join(root, "src")), newestMtime(join(root, "routes")));
  if (existsSync(built) && statSync(built).mtimeMs >= sources) {
    cpSync(join(root, "dist"), join(app, "dist"), { recursive: true });
    return;
  }
  await execFileAsync(
    process.execPath,
    [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.json"), "--outDir", join(app, "dist")],
    { cwd: root },
  );
}

/** The production dependencies into `app`: node_modules as `npm ci` left it, then the build stage's prune. */
async function provideProductionDependencies(app: string): Promise<void> {
  await execFileAsync("cp", ["-R", join(root, "node_modules"), join(app, "node_modules")]);
  await execFileAsync("npm", ["prune", "--omit=dev", "--no-audit", "--no-fund"], {
    cwd: app,
    env: { ...process.env, npm_config_update_notifier: "false", npm_config_loglevel: "error" },
  });
}

/** The image's /usr/local/bin: node (this one), and each `ln -s` of the stage's RUN instructions. */
function provideBin(stage: Stage, paths: { app: string; binDir: string }): void {
  mkdirSync(paths.binDir);
  const node = join(paths.binDir, "node");
  try {
    linkSync(process.execPath, node);
  } catch {
    copyFileSync(process.execPath, node);
  }
  chmodSync(node, 0o755);
  const inRehearsal = (path: string) => {
    for (const [image, local] of [
      ["/app", paths.app],
      ["/usr/local/bin", paths.binDir],
    ] as const) {
      if (path === image || path.startsWith(`${image}/`)) return local + path.slice(image.length);
    }
    throw new Error(`the rehearsal has no ${path} (from the runtime stage's RUN ln)`);
  };
  for (const command of runCommands(stage)) {
    const link = /^ln\s+-sf?\s+(\S+)\s+(\S+)$/.exec(command);
    if (link) symlinkSync(inRehearsal(link[1] as string), inRehearsal(link[2] as string));
  }
}

/** The runtime stage's files in a temp dir; `cleanup` removes them. */
export async function rehearseRuntimeStage(): Promise<RuntimeRehearsal> {
  const stage = dockerfileStages().at(-1) as Stage;
  const temp = tempDir("agent-image-");
  try {
    chmodSync(temp.path, 0o755);
    const app = join(temp.path, "app");
    const binDir = join(temp.path, "usr-local-bin");
    for (const file of ["package.json", "package-lock.json"]) cpSync(join(root, file), join(app, file));
    for (const source of stage.copies) cpSync(join(root, source), join(app, source), { recursive: true });
    await Promise.all([provideDist(app), provideProductionDependencies(app)]);
    // The build stage's last step, over what the runtime stage copies.
    await execFileAsync(process.execPath, [join(root, "scripts/slim-image.mjs"), app]);
    provideBin(stage, { app, binDir });
    const owned = (name: string) => {
      const path = join(temp.path, name);
      mkdirSync(path, { mode: 0o755 });
      if (asImageUser) chownSync(path, IMAGE_UID, IMAGE_UID);
      return path;
    };
    const [data, workspaces, home] = [owned("data"), owned("workspaces"), owned("home-node")];

    const spawnAs = (argv: string[], env: Record<string, string>) => {
      const [file, ...args] = asImageUser
        ? ["setpriv", `--reuid=${IMAGE_UID}`, `--regid=${IMAGE_UID}`, "--clear-groups", "--", ...argv]
        : argv;
      return spawn(file as string, args, { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] });
    };
    return {
      stage,
      dir: temp.path,
      app,
      data,
      workspaces,
      home,
      binDir,
      env: (extra = {}) => ({ PATH: `${binDir}:${IMAGE_PATH}`, HOME: home, ...stage.env, ...extra }),
      spawn: spawnAs,
      run(argv, env, timeoutMs = 60_000) {
        return new Promise((resolve, reject) => {
          const child = spawnAs(argv, env);
          const output = { stdout: "", stderr: "" };
          for (const name of ["stdout", "stderr"] as const) {
            child[name]?.setEncoding("utf8").on("data", (d: string) => {
              output[name] += d;
            });
          }
          const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
          child.on("error", reject);
          child.on("close", (code) => {
            clearTimeout(timer);
            resolve({ code, ...output });
          });
        });
      },
      cleanup: temp.cleanup,
    };
  } catch (err) {
    temp.cleanup();
    throw err;
  }
}
