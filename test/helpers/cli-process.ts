import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { compileCacheEnv } from "./compile-cache.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** The client's launcher, as `npx agent-server` runs it (dist/ is built by the global setup). */
export const CLI_LAUNCHER = join(root, "bin/agent-server.mjs");

export interface CliResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once `pattern` matches what the process wrote so far to `stream`. */
  waitFor(pattern: RegExp, stream?: "stdout" | "stderr"): Promise<void>;
  done: Promise<CliResult>;
}

/**
 * Runs `agent-server <args>` as a child process with only `env` (and PATH) in its
 * environment. Without `pty` its stdin is `stdin` (a pipe: not a terminal) and stdout and
 * stderr are separate pipes; with `pty` it runs under `script`, whose pseudo-terminal is its
 * stdin, stdout and stderr (both then arrive as `stdout`), and `child.stdin` types into it.
 */
export function startCli({
  args,
  env,
  stdin = "",
  pty = false,
}: {
  args: string[];
  env: Record<string, string>;
  stdin?: string | null;
  pty?: boolean;
}): CliProcess {
  const argv = [process.execPath, CLI_LAUNCHER, ...args];
  const child = pty
    ? spawn("script", ["-qfec", argv.map(shellQuote).join(" "), "/dev/null"], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SHELL: "/bin/sh", TERM: "dumb", ...compileCacheEnv, ...env },
        stdio: ["pipe", "pipe", "pipe"],
      })
    : spawn(argv[0] as string, argv.slice(1), {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...compileCacheEnv, ...env },
        stdio: ["pipe", "pipe", "pipe"],
      });
  if (!pty && stdin !== null) child.stdin?.end(stdin);
  const output = { stdout: "", stderr: "" };
  const waiters: Array<() => void> = [];
  for (const name of ["stdout", "stderr"] as const) {
    child[name]?.setEncoding("utf8").on("data", (d: string) => {
      output[name] += d;
      for (const wake of waiters.splice(0)) wake();
    });
  }
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, ...output }));
  });
  return {
    child,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    async waitFor(pattern, stream = "stderr") {
      const deadline = Date.now() + 5000;
      while (!pattern.test(output[stream])) {
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`the client did not print ${pattern} on ${stream}:\n${output.stdout}\n---\n${output.stderr}`);
        }
        await new Promise<void>((wake) => {
          waiters.push(wake);
          setTimeout(wake, 100);
        });
      }
    },
    done,
  };
}

/** Runs the client to its end. */
export function runCli(options: Parameters<typeof startCli>[0]): Promise<CliResult> {
  return startCli(options).done;
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
