import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, realpath, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type { ToolOutcome } from "../../src/agent/tool.js";
import type { WorkspaceToolDefinition } from "../../src/tools/definition.js";
import { removeAfterFile, removeAfterTest } from "../helpers/leftovers.js";

/**
 * A fresh temp directory holding `workspace/` (the tools' root) and `outside/` (a sibling the
 * tools must never reach), removed after the test (or, with `forFile`, after the test file:
 * for fixtures made in beforeAll). Both paths are real (no symlinks).
 */
export async function makeSandbox({
  forFile = false,
} = {}): Promise<{ base: string; workspace: string; outside: string }> {
  const base = await realpath(await mkdtemp(join(tmpdir(), "tools-test-")));
  (forFile ? removeAfterFile : removeAfterTest)(base);
  const workspace = join(base, "workspace");
  const outside = join(base, "outside");
  await mkdir(workspace);
  await mkdir(outside);
  return { base, workspace, outside };
}

/** Writes files given as `{relative path: content}` under `dir`, creating parents. */
export async function writeTree(dir: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

/**
 * Runs a tool as the loop does: the raw input is parsed by the tool's schema first (a
 * schema rejection throws here, as the loop would turn it into INVALID_ARGUMENTS).
 */
export function runTool<I>(
  tool: WorkspaceToolDefinition<I>,
  workspace: string,
  input: unknown,
  signal: AbortSignal = new AbortController().signal,
): Promise<ToolOutcome> {
  return tool.execute(tool.inputSchema.parse(input), { workspace, signal, toolCallId: "call_test" });
}

/** The text a tool result shows the model: the output, or the error message. */
export const shown = (outcome: ToolOutcome): string => (outcome.ok ? outcome.output : outcome.message);

export function expectOk(outcome: ToolOutcome): string {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.errorCode}: ${outcome.message}`);
  return outcome.output;
}

export function expectError(outcome: ToolOutcome, errorCode: string): string {
  if (outcome.ok) throw new Error(`expected ${errorCode}, got success: ${outcome.output.slice(0, 500)}`);
  if (outcome.errorCode !== errorCode)
    throw new Error(`expected ${errorCode}, got ${outcome.errorCode}: ${outcome.message}`);
  return outcome.message;
}

/**
 * Whether a process is still running. A zombie counts as gone: in this container PID 1
 * does not reap orphans, so a killed grandchild stays a zombie although it no longer runs.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return process.platform !== "linux";
  }
}

/** Polls until `path` exists with non-empty content (a child process writes it), or fails after `timeoutMs`. */
export async function waitForFile(path: string, timeoutMs = 5000): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (existsSync(path)) {
      const text = readFileSync(path, "utf8").trim();
      if (text !== "") return text;
    }
    await delay(10);
  }
  throw new Error(`${path} did not appear within ${timeoutMs} ms`);
}
