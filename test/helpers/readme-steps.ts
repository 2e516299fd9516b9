/**
 * Runs README code blocks as a person would type them into one terminal: the ```sh blocks
 * of a marked section, one after the other, each by `/bin/sh` (`set -eu`), with the shell
 * variables earlier blocks assigned carried to the later ones.
 */
import { spawn } from "node:child_process";

const BLOCK_TIMEOUT_MS = 15_000;

export interface Step {
  /** A ```sh block of the section. */
  code: string;
  /** The ```text block right after it (before the next ```sh block): the output the README shows. */
  shown: string | null;
}

/** The steps of the README's section between `<!-- name -->` and `<!-- /name -->`, in order. */
export function readmeSteps(markdown: string, name: string): Step[] {
  const start = markdown.indexOf(`<!-- ${name} -->`);
  const end = markdown.indexOf(`<!-- /${name} -->`, start);
  if (start < 0 || end < 0) throw new Error(`README.md has no <!-- ${name} --> ... <!-- /${name} --> section`);
  const steps: Step[] = [];
  for (const fence of markdown.slice(start, end).matchAll(/^```(\w*)\n([\s\S]*?)^```\s*$/gm)) {
    const [, lang, body = ""] = fence;
    const last = steps.at(-1);
    if (lang === "sh") steps.push({ code: body, shown: null });
    else if (lang === "text" && last && last.shown === null) last.shown = body;
  }
  return steps;
}

/** Names the blocks assign (`NAME=...` at the start of a line). */
export function assignedNames(blocks: string[]): string[] {
  const names = blocks.flatMap((b) =>
    [...b.matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=/gm)].map((m) => m[1]),
  );
  return [...new Set(names.filter((n): n is string => n !== undefined))];
}

export interface BlockResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The shell variables after the block. */
  vars: Record<string, string>;
}

/**
 * Runs one block with `/bin/sh` (`set -eu`: a failing command or an unset variable fails
 * it), with `vars` from earlier blocks in its environment; afterwards the assigned
 * variables are exported and dumped as JSON to fd 3.
 */
export function runBlock(
  block: string,
  env: Record<string, string>,
  names: string[],
  cwd: string,
): Promise<BlockResult> {
  const dump = names.length
    ? `export ${names.join(" ")}\n"$WALKTHROUGH_NODE" -e 'const o={};for(const n of process.argv.slice(1))if(process.env[n]!==undefined)o[n]=process.env[n];require("fs").writeSync(3,JSON.stringify(o))' ${names.join(" ")}\n`
    : "";
  const script = `set -eu\n${block}\n${dump}`;
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", script], {
      cwd,
      env: { ...env, WALKTHROUGH_NODE: process.execPath },
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    let state = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const fd3 = child.stdio[3];
    if (fd3 && "setEncoding" in fd3) {
      fd3.setEncoding("utf8");
      fd3.on("data", (d: string) => {
        state += d;
      });
    }
    const timer = setTimeout(() => {
      stderr += `\n[killed: the block did not end within ${BLOCK_TIMEOUT_MS} ms]`;
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    }, BLOCK_TIMEOUT_MS);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      let vars: Record<string, string> = {};
      try {
        vars = state ? JSON.parse(state) : {};
      } catch {
        // A block that failed before the dump leaves no state; the exit code says so.
      }
      resolve({ code, stdout, stderr, vars });
    });
  });
}
