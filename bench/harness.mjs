// What the benchmarks share: child processes started and always stopped, the fake
// upstream, a server on a free loopback port, /proc CPU readings, and the load driver.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("..", import.meta.url));

/** A non-negative integer from the environment; exits 2 on anything else. */
export function envInt(name, fallback) {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`${name} must be a non-negative integer`);
    process.exit(2);
  }
  return value;
}

/** `x` with `digits` decimals, "n/a" when it is not a finite number. */
export const fmt = (x, digits = 1) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "n/a");

/** The median of the finite numbers in `xs` (NaN when none). */
export function median(xs) {
  const sorted = xs.filter((x) => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * CPU ms (utime + stime, 10 ms ticks) a process has used, from /proc; with `reapedChildren`
 * also that of its children that ended and were waited for (cutime + cstime). Null where
 * /proc is missing.
 */
export function cpuMsOf(pid, { reapedChildren = false } = {}) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const own = Number(fields[11]) + Number(fields[12]);
    return (reapedChildren ? own + Number(fields[13]) + Number(fields[14]) : own) * 10;
  } catch {
    return null;
  }
}

/** The load average (1, 5, 15 minutes). */
export const machineLoad = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

/** One line on the machine: cpu, node, load average. */
export function machineLine() {
  const cpus = os.cpus();
  return `machine: ${cpus[0]?.model?.trim() ?? "unknown cpu"} x${cpus.length}, node ${process.version}, load average ${machineLoad()}`;
}

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

/**
 * A benchmark's children and temp dir: `track` registers a child, `stop` ends them all
 * (SIGTERM, SIGKILL after a grace), `fail` prints and exits 1. Children are killed and the
 * temp dir removed on exit and on SIGINT/SIGTERM (BENCH_KEEP_TMP=1 keeps the dir); what
 * `atCleanup` registered (e.g. stopping a daemon living in the dir) runs first, last first.
 */
/**
 * `[command, args]` to spawn node with `args`, pinned with BENCH_PIN=1 (taskset): a server on
 * the machine's last CPU, anything else (the fake upstream, the load driver) on the others,
 * so that a server's CPU a run is not moved by the other processes' scheduling. Unpinned
 * otherwise, or where there is a single CPU.
 */
export function nodeCommand(role, args) {
  const cpus = os.availableParallelism();
  if (process.env.BENCH_PIN !== "1" || cpus < 2) return [process.execPath, args];
  const cores = role === "server" ? String(cpus - 1) : cpus === 2 ? "0" : `0-${cpus - 2}`;
  return ["taskset", ["-c", cores, process.execPath, ...args]];
}

export function createHarness(name) {
  const tmp = mkdtempSync(join(os.tmpdir(), `${name}-`));
  const children = new Set();
  const atCleanup = [];
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    for (const stop of atCleanup.splice(0).reverse()) {
      try {
        stop();
      } catch {
        // best effort: the rest still runs
      }
    }
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    }
    if (process.env.BENCH_KEEP_TMP !== "1") rmSync(tmp, { recursive: true, force: true });
  };
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      console.error(`\n${signal}: stopping the children`);
      cleanup();
      process.exit(130);
    });
  }
  process.on("exit", cleanup);

  const track = (child, label) => {
    children.add(child);
    child.once("exit", (code, signal) => {
      children.delete(child);
      if (!cleaned && !child.expectedExit) console.error(`${label} exited (code ${code}, signal ${signal})`);
    });
    return child;
  };
  /** Stops `which` (default: every child), killing whatever is still alive after `ms`. */
  const stop = async (which = [...children], ms = 5000) => {
    const alive = which.filter((c) => c.exitCode === null && c.signalCode === null);
    for (const child of alive) {
      child.expectedExit = true;
      child.kill("SIGTERM");
    }
    const timer = setTimeout(() => {
      for (const child of alive) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }, ms);
    await Promise.all(
      alive.map((child) => new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)))),
    );
    clearTimeout(timer);
  };
  const fail = (message) => {
    console.error(`${name}: ${message}`);
    cleanup();
    process.exit(1);
  };

  /** Starts the fake upstream (`script`, env added) and resolves with { child, port, url }. */
  const startUpstream = (script, env = {}) => {
    const child = track(
      spawn(...nodeCommand("upstream", [script]), {
        env: { ...process.env, PORT: "0", HOST: "127.0.0.1", ...env },
        stdio: ["ignore", "pipe", "inherit"],
      }),
      "fake upstream",
    );
    return new Promise((resolvePort, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error("the fake upstream printed no port within 10 s")), 10_000);
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (text) => {
        out += text;
        const nl = out.indexOf("\n");
        if (nl >= 0) {
          clearTimeout(timer);
          child.stdout.removeAllListeners("data");
          child.stdout.resume();
          const port = Number(out.slice(0, nl).trim());
          resolvePort({ child, port, url: `http://127.0.0.1:${port}/v1` });
        }
      });
      child.once("exit", () => reject(new Error("the fake upstream exited before printing its port")));
    });
  };

  /**
   * The fake upstream streaming `tokens` stamped tokens, one per `intervalMs`, after one
   * list_files call (see bench/fake-upstream.mjs); `hold` holds text answers until POST /release.
   */
  const startStreamingUpstream = ({ tokens, intervalMs, hold = false }) =>
    startUpstream(join(root, "bench/fake-upstream.mjs"), {
      FAKE_TOOL_NAME: "list_files",
      FAKE_TOOL_ARGS: "{}",
      FAKE_TEXT_TOKENS: String(tokens),
      FAKE_TOKEN_INTERVAL_MS: String(intervalMs),
      ...(hold ? { FAKE_HOLD_TEXT: "1" } : {}),
    });

  /**
   * Starts a server (`entry`, relative to the repo or absolute) on a free port with a temp
   * database and workspaces, against `upstreamUrl`; resolves once /healthz answers, with
   * { child, url, dbPath }.
   */
  const startServer = async ({ entry, label, upstreamUrl, env = {}, nodeArgs = [], cwd = root, onStdout }) => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmp, `${label}-`));
    const child = track(
      spawn(...nodeCommand("server", [...nodeArgs, entry]), {
        cwd,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? tmp,
          PORT: String(port),
          HOST: "127.0.0.1",
          DATABASE_PATH: join(dir, "agent.db"),
          WORKSPACE_ROOT: join(dir, "workspaces"),
          OPENAI_BASE_URL: upstreamUrl,
          OPENAI_API_KEY: "bench-not-a-secret",
          OPENAI_MODEL: "fake-model",
          LOG_LEVEL: "warn",
          ...env,
        },
        // With `onStdout`, what the server prints (V8's --trace-gc-nvp lines, say) goes to it.
        stdio: ["ignore", onStdout ? "pipe" : "inherit", "inherit"],
      }),
      label,
    );
    if (onStdout) {
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", onStdout);
    }
    const url = `http://127.0.0.1:${port}`;
    await waitForHealth(url, child);
    return { child, url, dbPath: join(dir, "agent.db") };
  };

  /**
   * Runs the load driver (`script`, args) once, its output going to ours; resolves with its
   * --json result (null when it wrote none).
   */
  const runLoad = (script, label, args) => {
    const jsonPath = join(tmp, `${label.replace(/\W+/g, "-")}-${Date.now()}.json`);
    return new Promise((resolveResult) => {
      const child = track(
        spawn(...nodeCommand("driver", [script, ...args, "--label", label, "--json", jsonPath]), {
          stdio: ["ignore", "inherit", "inherit"],
        }),
        `load driver (${label})`,
      );
      child.expectedExit = true;
      child.once("exit", (code) => {
        let result = null;
        try {
          result = JSON.parse(readFileSync(jsonPath, "utf8"));
        } catch {
          // no result written
        }
        if (code !== 0) console.error(`  (load driver for ${label} exited ${code})`);
        resolveResult(result);
      });
    });
  };

  /**
   * The servers a benchmark compares: ours (dist/src/server.js), and with BENCH_BASE_ROOT set
   * (another checkout of this repository, built) "base", that checkout's server, measured
   * in alternation with ours in the same sitting (a before/after on a noisy machine).
   */
  const startOurs = async ({ upstreamUrl, env = {}, nodeArgs = [] }) => {
    const servers = {
      ours: await startServer({ entry: join(root, "dist/src/server.js"), label: "ours", upstreamUrl, env, nodeArgs }),
    };
    const base = process.env.BENCH_BASE_ROOT;
    if (base) {
      servers.base = await startServer({
        entry: join(base, "dist/src/server.js"),
        label: "base",
        upstreamUrl,
        env: { ...env, ...envPairs(process.env.BENCH_BASE_ENV) },
        nodeArgs,
        cwd: base,
      });
    }
    return servers;
  };

  return {
    tmp,
    track,
    stop,
    fail,
    cleanup,
    atCleanup: (fn) => void atCleanup.push(fn),
    startUpstream,
    startStreamingUpstream,
    startServer,
    startOurs,
    runLoad,
  };
}

/** "K=V K2=V2" as an object (BENCH_SERVER_ENV, BENCH_BASE_ENV). */
export function envPairs(text = "") {
  return Object.fromEntries(
    text
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
}

export async function waitForHealth(url, child, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the server exited (code ${child.exitCode}) before it was healthy`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url}/healthz did not answer 200 within ${ms} ms`);
}
