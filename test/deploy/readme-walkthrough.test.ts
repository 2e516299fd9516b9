/**
 * Runs the README's curl walk-through verbatim against a live server.
 *
 * The ```sh blocks between `<!-- walkthrough -->` and `<!-- /walkthrough -->` are run one
 * after the other, each by `/bin/sh` with real `curl` and `jq`, as a person would type
 * them into one terminal: shell variables a block sets (SESSION, RUN, ...) are carried to
 * the next ones, and `BASE` comes from the environment. Between blocks the test may wait
 * for the server to reach the state a person would see before typing the next step (a run
 * awaiting approval). The model is the fake upstream, answering by the user's input.
 * Where the README shows a step's output in a ```text block right after it and that
 * output is deterministic, the step must print exactly that.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeReply } from "../fakes/openai-upstream.js";
import { assignedNames, readmeSteps, runBlock } from "../helpers/readme-steps.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

interface Frame {
  id: number;
  event: string;
  // biome-ignore lint/suspicious/noExplicitAny: event payloads are checked field by field.
  data: any;
}

/** Parses `curl -N` output of an event stream. */
function parseSse(text: string): Frame[] {
  const frames: Frame[] = [];
  for (const block of text.split("\n\n")) {
    let id = Number.NaN;
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) id = Number(line.slice(4));
      else if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (data.length) frames.push({ id, event, data: JSON.parse(data.join("\n")) });
  }
  return frames;
}

const lines = (text: string) => text.replace(/\n$/, "").split("\n");

/** The scripted model: what it answers depends on the run's input and whether a tool result came back. */
// biome-ignore lint/suspicious/noExplicitAny: the request body the client sent.
function scriptedModel(body: any): FakeReply {
  const messages: Array<{ role: string; content: unknown }> = body.messages;
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const input = String(messages[lastUser]?.content ?? "");
  const results = messages.slice(lastUser + 1).filter((m) => m.role === "tool");
  const call = (id: string, name: string, args: unknown): FakeReply => ({
    toolCalls: [{ id, name, arguments: JSON.stringify(args) }],
  });
  if (input === "What files are in the workspace?")
    return results.length ? { text: "The workspace is empty." } : call("call_list", "list_files", {});
  if (input === "Create hello.txt saying hello, world")
    return results.length
      ? { text: "Created hello.txt." }
      : call("call_write", "write_file", { path: "hello.txt", content: "hello, world\n" });
  if (input === "Run the test suite") return call("call_shell", "shell", { command: "npm test" });
  if (input === "What does hello.txt say?") {
    if (!results.length) return call("call_read", "read_file", { path: "hello.txt" });
    const read = String(results[0]?.content ?? "");
    return { text: read.includes("hello, world") ? 'It says "hello, world".' : `I could not read it: ${read}` };
  }
  return { status: 400, errorBody: { error: { message: `the walk-through test has no script for: ${input}` } } };
}

const tools = spawnSync("/bin/sh", ["-c", "command -v curl && command -v jq"], { encoding: "utf8" });
if (tools.status !== 0) {
  throw new Error("the README walk-through needs curl and jq on PATH (.ci/run installs them with apt-get)");
}

describe("the README's curl walk-through", () => {
  let server: TestServer;
  let work: { path: string; cleanup: () => void };
  const steps = readmeSteps(readFileSync(join(root, "README.md"), "utf8"), "walkthrough");
  const blocks = steps.map((step) => step.code);
  const names = assignedNames(blocks);
  let vars: Record<string, string> = {};

  beforeAll(async () => {
    server = await startTestServer();
    server.upstream.fallback = scriptedModel;
    work = tempDir("walkthrough-");
  });
  afterAll(async () => {
    await server?.close();
    work?.cleanup();
  });

  /** Runs block `index` with the variables so far; expects it to succeed. */
  async function step(index: number): Promise<string> {
    const block = blocks[index];
    if (block === undefined) throw new Error(`the walk-through has no block ${index + 1}`);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: work.path,
      LANG: "C.UTF-8",
      BASE: server.url,
      ...vars,
    };
    const result = await runBlock(block, env, names, work.path);
    if (result.code !== 0) {
      throw new Error(
        `walk-through block ${index + 1} failed (exit ${result.code}):\n${block}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
      );
    }
    vars = { ...vars, ...result.vars };
    if (process.env.WALKTHROUGH_PRINT) process.stderr.write(`--- block ${index + 1}\n${result.stdout}`);
    return result.stdout;
  }

  /** The step's output must be exactly what the README shows after it. */
  function expectShown(index: number, stdout: string): void {
    const shown = steps[index]?.shown;
    if (shown !== stdout) {
      throw new Error(
        `the README shows, after step ${index + 1}:\n${shown}\nbut the step printed:\n${stdout}\nupdate the README (or the code)`,
      );
    }
  }

  async function waitForStatus(runId: string, status: string): Promise<void> {
    const deadline = Date.now() + 5000;
    let last = "";
    while (Date.now() < deadline) {
      last = (await server.request("GET", `/runs/${runId}`)).body.status;
      if (last === status) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`run ${runId} did not reach ${status} (last: ${last})`);
  }

  it("has the steps this test knows", () => {
    expect(blocks).toHaveLength(11);
    expect(names).toEqual(expect.arrayContaining(["BASE", "SESSION", "RUN", "CALL", "RUN2"]));
  });

  it("runs every step verbatim with the documented results", { timeout: 90_000 }, async () => {
    // 1. Create a session.
    const created = await step(0);
    expect(created.trim()).toMatch(/^ses_\w+$/);
    expect(vars.SESSION).toBe(created.trim());
    expect(vars.BASE).toBe(server.url);
    expect(steps[0]?.shown).toMatch(/^ses_\w+\n$/);

    // 2. A streamed run with a read-only tool; the stream ends by itself after run.finished.
    const streamed = parseSse(await step(1));
    expect(streamed.map((f) => f.id)).toEqual(streamed.map((_, i) => i + 1));
    expect(streamed.map((f) => f.event)).toEqual([
      "run.started",
      "message",
      "turn.started",
      "message",
      "tool.started",
      "message",
      "turn.started",
      "text.delta",
      "message",
      "run.finished",
    ]);
    expect(streamed[5]?.data.message).toMatchObject({ role: "tool", toolCallId: "call_list", isError: false });
    expect(streamed.at(-1)?.data.run).toMatchObject({ status: "finished", stopReason: "complete" });

    // 3. A run started without streaming; it will ask to write a file.
    const started = await step(2);
    expect(started.trim()).toMatch(/^run_\w+$/);
    const run = vars.RUN as string;
    expect(run).toBe(started.trim());
    expect(steps[2]?.shown).toMatch(/^run_\w+\n$/);
    await waitForStatus(run, "awaiting_approval");

    // 4. Its status and the pending call.
    const pendingOut = await step(3);
    expectShown(3, pendingOut);
    const pending = lines(pendingOut);
    expect(pending[0]).toBe("awaiting_approval");
    expect(JSON.parse(pending[1] ?? "null")).toEqual({
      toolCallId: "call_write",
      tool: "write_file",
      input: { path: "hello.txt", content: "hello, world\n" },
    });
    expect(pending).toHaveLength(2);

    // 5. Approve it.
    const approved = await step(4);
    expectShown(4, approved);
    expect(approved).toBe("approved\n");
    expect(vars.CALL).toBe("call_write");

    // 6. Watch the events: replayed from 1, then live, ending after run.finished.
    const watched = parseSse(await step(5));
    expect(watched.map((f) => f.id)).toEqual(watched.map((_, i) => i + 1));
    const types = watched.map((f) => f.event);
    expect(types.slice(0, 7)).toEqual([
      "run.started",
      "message",
      "turn.started",
      "message",
      "approval.requested",
      "approval.resolved",
      "tool.started",
    ]);
    expect(watched[5]?.data).toMatchObject({ toolCallId: "call_write", decision: "approve", reason: "fine by me" });
    expect(watched.at(-1)?.event).toBe("run.finished");
    expect(watched.at(-1)?.data.run).toMatchObject({ status: "finished", stopReason: "complete" });
    const session = (await server.request("GET", `/sessions/${vars.SESSION}`)).body;
    const file = join(server.ctx.config.WORKSPACE_ROOT, session.workspace, "hello.txt");
    expect(readFileSync(file, "utf8")).toBe("hello, world\n");

    // 7. Reconnect with Last-Event-ID: 5 — only the later events.
    const replayOut = await step(6);
    expectShown(6, replayOut);
    const replay = lines(replayOut);
    expect(replay).toEqual(watched.slice(5).map((f) => `id: ${f.id}\tevent: ${f.event}`));
    expect(replay[0]).toBe("id: 6\tevent: approval.resolved");

    // 8. A run that wants to run a shell command.
    expect(await step(7)).toBe("");
    const run2 = vars.RUN2 as string;
    expect(run2).toMatch(/^run_\w+$/);
    await waitForStatus(run2, "awaiting_approval");

    // 9. Cancel it: 202 cancelling, then run.finished aborted.
    const cancelOut = await step(8);
    expectShown(8, cancelOut);
    expect(lines(cancelOut)).toEqual(["cancelling", '{"status":"finished","stopReason":"aborted"}']);
    const cancelled = (await server.request("GET", `/runs/${run2}`)).body;
    expect(cancelled).toMatchObject({ status: "finished", stopReason: "aborted" });

    // 10. One-shot with ?wait=true.
    const oneShot = await step(9);
    expectShown(9, oneShot);
    expect(JSON.parse(oneShot)).toEqual({ stopReason: "complete", text: 'It says "hello, world".' });

    // 11. The committed history: every tool call has its result, the cancelled one included.
    const historyOut = await step(10);
    expectShown(10, historyOut);
    const history = lines(historyOut);
    const stored = (await server.request("GET", `/sessions/${vars.SESSION}/messages`)).body.items as Array<{
      seq: number;
      role: string;
      content: string;
    }>;
    expect(history).toEqual(stored.map((m) => `${m.seq} ${m.role}: ${m.content}`));
    expect(stored.map((m) => m.role)).toEqual([
      ...["user", "assistant", "tool", "assistant"],
      ...["user", "assistant", "tool", "assistant"],
      ...["user", "assistant", "tool"],
      ...["user", "assistant", "tool", "assistant"],
    ]);
    expect(history[0]).toBe("1 user: What files are in the workspace?");
    expect(history[3]).toBe("4 assistant: The workspace is empty.");
    expect(history[6]).toBe('7 tool: wrote 13 bytes to "hello.txt" (created)');
    expect(history[10]).toBe("11 tool: aborted before execution: the run was cancelled");
    expect(history[13]).toMatch(/^14 tool: +1\thello, world$/);
    expect(history[14]).toBe('15 assistant: It says "hello, world".');
    // Seven model requests: two per answered run, one for the cancelled run.
    expect(server.upstream.requests).toHaveLength(7);
    expect(readdirSync(join(server.ctx.config.WORKSPACE_ROOT, session.workspace))).toEqual(["hello.txt"]);
  });
});
