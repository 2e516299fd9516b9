/**
 * The command-line client (`bin/agent-server.mjs`, built into dist/) spawned as a real
 * child process against a live server whose model is the fake upstream.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type FakeReply, type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { freePort } from "../helpers/child-server.js";
import { runCli, startCli } from "../helpers/cli-process.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { cliModel } from "./model-script.js";

const KEY = "cli-test-key-0123456789";
/** A reply that streams "Thinking" and then never ends (until the request is aborted). */
const THINKING: FakeReply = { text: ["Thinking"], hang: "after-chunks", afterChunks: 2 };

if (spawnSync("/bin/sh", ["-c", "command -v script"]).status !== 0) {
  throw new Error("the client's terminal tests need `script` (util-linux / bsdutils) on PATH for a pseudo-terminal");
}

describe("agent-server run", () => {
  let server: TestServer;
  const env = () => ({ AGENT_URL: server.url, AGENT_API_KEY: KEY });
  const auth = { authorization: `Bearer ${KEY}` };
  const get = async (path: string) => (await server.request("GET", path, { headers: auth })).body;
  const sessionOf = (stderr: string) => /^session (ses_\w+)\r?$/m.exec(stderr)?.[1] as string;
  const runOf = (stderr: string) => /^run (run_\w+)\r?$/m.exec(stderr)?.[1] as string;
  const workspaceFile = async (sessionId: string, name: string) =>
    join(server.ctx.config.WORKSPACE_ROOT, (await get(`/sessions/${sessionId}`)).workspace, name);

  beforeAll(async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY } });
    server.upstream.fallback = cliModel;
  });
  afterAll(async () => {
    await server?.close();
  });

  it("streams the answer to stdout and the session, run and tool activity to stderr", async () => {
    const result = await runCli({ args: ["run", "What files are in the workspace?"], env: env() });
    expect(result.stderr).toMatch(/^session ses_\w+\nrun run_\w+\n/);
    expect(result.stdout).toBe("Let me look.\nThe workspace is empty.\n");
    expect(result.stderr).toContain('[tool] list_files {}\n[tool] list_files done: (no files or directories in ".")\n');
    expect(result.stderr).toMatch(/\[run\] complete \(2 turns, 1 tool call\)\n$/);
    expect(result.code).toBe(0);
  });

  it("reuses a session with --session: the id on stderr is what a script passes back", async () => {
    const first = await runCli({
      args: ["run", "Create hello.txt saying hello, world", "-a", "write_file"],
      env: env(),
    });
    const session = sessionOf(first.stderr);
    const second = await runCli({ args: ["run", "--session", session, "What does hello.txt say?"], env: env() });
    expect(second.stdout).toBe('It says "hello, world".\n');
    expect(sessionOf(second.stderr)).toBe(session);
    const runs = (await get(`/sessions/${session}/runs`)).items.map((r: { id: string }) => r.id);
    expect(runs.sort()).toEqual([runOf(first.stderr), runOf(second.stderr)].sort());
    expect(second.code).toBe(0);
  });

  it("--json prints every event as one JSON line on stdout, in order", async () => {
    const result = await runCli({ args: ["run", "--json", "What files are in the workspace?"], env: env() });
    const events = result.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    // Text pieces that arrive close together may be sent as one text.delta: count them as one.
    const types = events.map((e) => e.type).filter((type, i, all) => type !== "text.delta" || all[i - 1] !== type);
    expect(types).toEqual([
      ...["run.started", "message", "turn.started", "text.delta", "message", "tool.started", "message"],
      ...["turn.started", "text.delta", "message", "run.finished"],
    ]);
    expect(events.every((e) => e.runId === runOf(result.stderr))).toBe(true);
    expect(events.at(-1).run).toMatchObject({ status: "finished", stopReason: "complete" });
    expect(result.stderr).toContain("[tool] list_files done");
    expect(result.code).toBe(0);
  });

  it("without a terminal denies a call that asks for approval, and says how to allow it", async () => {
    const result = await runCli({ args: ["run", "Create hello.txt saying hello, world"], env: env() });
    expect(result.stderr).toContain(
      '[approval] write_file asks for approval: write_file requires approval\n  {\n    "path": "hello.txt",\n    "content": "hello, world\\n"\n  }\n',
    );
    expect(result.stderr).toContain(
      "[approval] no terminal to ask, so it is denied; to allow it, run with --approve write_file (or --approve all)\n",
    );
    expect(result.stderr).toContain("[approval] write_file denied: no terminal to ask: denied by agent-server\n");
    expect(result.stderr).toContain("[tool] write_file failed (DENIED): tool call denied: no terminal to ask");
    expect(result.stdout).toBe("I was not allowed to create it.\n");
    expect(existsSync(await workspaceFile(sessionOf(result.stderr), "hello.txt"))).toBe(false);
    expect(result.code).toBe(0);
  });

  it("--approve approves the calls of the tools it names", async () => {
    const result = await runCli({
      args: ["run", "--approve", "shell,write_file", "Create hello.txt saying hello, world"],
      env: env(),
    });
    expect(result.stderr).toContain("[approval] write_file approved: approved by agent-server --approve write_file\n");
    expect(result.stdout).toBe("Created hello.txt.\n");
    expect(existsSync(await workspaceFile(sessionOf(result.stderr), "hello.txt"))).toBe(true);
    expect(result.code).toBe(0);
  });

  it("--approve with a name that is no tool of the server is a usage error, before any session or run is made", async () => {
    const sessionsBefore = (await get("/sessions")).items.length;
    const result = await runCli({ args: ["run", "--approve", "write_flie", "Create hello.txt"], env: env() });
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("--approve names no tool of this server: write_flie (its tools: ");
    expect(result.stderr).toContain("write_file");
    expect((await get("/sessions")).items.length).toBe(sessionsBefore);
  });

  for (const [answer, approved] of [
    ["y", true],
    ["N", false],
  ] as const) {
    it(`asks on a terminal, showing the tool, why and the arguments; "${answer}" ${approved ? "approves" : "denies"}`, async () => {
      const cli = startCli({ args: ["run", "Create hello.txt saying hello, world"], env: env(), pty: true });
      await cli.waitFor(/Allow this call\? \[y\/N\] $/, "stdout");
      expect(cli.stdout()).toContain("[approval] write_file asks for approval: write_file requires approval");
      expect(cli.stdout()).toContain('"path": "hello.txt"');
      cli.child.stdin?.write(`${answer}\r`);
      const result = await cli.done;
      expect(result.stdout).toContain(
        approved
          ? "[approval] write_file approved: approved at the terminal"
          : "[approval] write_file denied: denied at the terminal",
      );
      expect(result.stdout).toContain(approved ? "Created hello.txt." : "I was not allowed to create it.");
      expect(existsSync(await workspaceFile(sessionOf(result.stdout), "hello.txt"))).toBe(approved);
      expect(result.code).toBe(0);
    });
  }

  it("withdraws the question when the call is decided elsewhere meanwhile", async () => {
    const cli = startCli({ args: ["run", "Create hello.txt saying hello, world"], env: env(), pty: true });
    await cli.waitFor(/Allow this call\? \[y\/N\] $/, "stdout");
    const runId = runOf(cli.stdout());
    const decided = await server.request("POST", `/runs/${runId}/approvals/call_write`, {
      body: { decision: "approve", reason: "from the web" },
      headers: auth,
    });
    expect(decided.status).toBe(200);
    const result = await cli.done;
    expect(result.stdout).toContain("[approval] write_file approved: from the web");
    expect(result.stdout).toContain("Created hello.txt.");
    expect(result.code).toBe(0);
  });

  it("Ctrl-C at the question cancels the run", async () => {
    const cli = startCli({ args: ["run", "Create hello.txt saying hello, world"], env: env(), pty: true });
    await cli.waitFor(/Allow this call\? \[y\/N\] $/, "stdout");
    cli.child.stdin?.write("\u0003");
    const result = await cli.done;
    expect(result.stdout).toContain("[run] cancelling");
    expect(result.stdout).toMatch(/\[run\] aborted: .*the run was cancelled by a DELETE/);
    const runId = runOf(result.stdout);
    expect(await get(`/runs/${runId}`)).toMatchObject({ status: "finished", stopReason: "aborted" });
    expect(result.code).toBe(130);
  });

  /**
   * Keys typed ahead (while the answer streams, or into a question that another client then
   * decided) must not answer the next question, a call the user has not seen yet. Each test
   * types `y⏎` while no question is open, waits for the client to say it read and dropped
   * them (so they were read before the question, not by luck of timing), then answers the
   * question with `n⏎`: keys are read in the order typed, so the call can only end up denied
   * if the `y⏎` answered nothing.
   */
  describe("type-ahead", () => {
    const ASKING = /Allow this call\? \[y\/N\] $/;
    const IGNORED = /\[input\] ignored what was typed while no question was open/;
    const writeCall = (id: string, path: string) => ({
      id,
      name: "write_file",
      arguments: JSON.stringify({ path, content: "hello, world\n" }),
    });
    /** A model reply held back until `release()`; released anyway when the test ends. */
    const held = (reply: FakeReply): { reply: FakeReply; release: () => void } => {
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      onTestFinished(() => release());
      return { reply: { ...reply, gate }, release: () => release() };
    };
    const start = () => {
      const cli = startCli({ args: ["run", "Create hello.txt saying hello, world"], env: env(), pty: true });
      onTestFinished(() => {
        if (cli.child.exitCode === null) cli.child.kill();
      });
      return cli;
    };

    it("keys typed before the first question is shown do not answer it: it waits for keys typed after", async () => {
      const first = held({ toolCalls: [writeCall("call_write", "hello.txt")] });
      server.upstream.enqueue(first.reply);
      const cli = start();
      await cli.waitFor(/^run run_\w+\r?$/m, "stdout");
      cli.child.stdin?.write("y\r");
      await cli.waitFor(IGNORED, "stdout");
      first.release();
      await cli.waitFor(ASKING, "stdout");
      cli.child.stdin?.write("n\r");
      const result = await cli.done;
      expect(result.stdout).toContain("[approval] write_file denied: denied at the terminal");
      expect(result.stdout).not.toContain("approved at the terminal");
      expect(existsSync(await workspaceFile(sessionOf(result.stdout), "hello.txt"))).toBe(false);
      expect(result.code).toBe(0);
    });

    it("keys typed after a question was decided by another client do not answer the next question", async () => {
      const second = held({ toolCalls: [writeCall("call_second", "second.txt")] });
      server.upstream.enqueue({ toolCalls: [writeCall("call_write", "hello.txt")] }, second.reply);
      const cli = start();
      await cli.waitFor(ASKING, "stdout");
      const runId = runOf(cli.stdout());
      const decided = await server.request("POST", `/runs/${runId}/approvals/call_write`, {
        body: { decision: "approve", reason: "from the web" },
        headers: auth,
      });
      expect(decided.status).toBe(200);
      await cli.waitFor(/\[approval\] write_file approved: from the web/, "stdout");
      cli.child.stdin?.write("y\r");
      await cli.waitFor(IGNORED, "stdout");
      second.release();
      await cli.waitFor(/"path": "second\.txt"[\s\S]*Allow this call\? \[y\/N\] $/, "stdout");
      cli.child.stdin?.write("n\r");
      const result = await cli.done;
      expect(result.stdout).toContain("[approval] write_file denied: denied at the terminal");
      expect(result.stdout).not.toContain("approved at the terminal");
      const sessionId = sessionOf(result.stdout);
      expect(existsSync(await workspaceFile(sessionId, "hello.txt"))).toBe(true);
      expect(existsSync(await workspaceFile(sessionId, "second.txt"))).toBe(false);
      expect(result.code).toBe(0);
    });

    it("Ctrl-S stops the output and Ctrl-Q shows what came meanwhile, as a terminal's flow control does (raw mode turns it off)", async () => {
      // A reply's chunks go before its gate: the text comes in the reply after a held tool call.
      const look = held({ toolCalls: [{ id: "call_list", name: "list_files", arguments: "{}" }] });
      server.upstream.enqueue(look.reply, { text: ["Held back ", "until Ctrl-Q."] });
      const cli = start();
      await cli.waitFor(/^run run_\w+\r?$/m, "stdout");
      cli.child.stdin?.write("\u0013");
      await cli.waitFor(/\[output\] stopped \(Ctrl-S\): Ctrl-Q goes on/, "stdout");
      look.release();
      // The run ends at the server meanwhile; the client shows none of it.
      const runId = runOf(cli.stdout());
      // Asked until it has (10 s): 100 tries of 20 ms could end first on a loaded machine.
      const ended = await until(
        () => get(`/runs/${runId}`),
        (run) => run.status === "finished",
        "the run to finish",
      );
      expect(ended).toMatchObject({ status: "finished", stopReason: "complete" });
      await delay(300);
      expect(cli.stdout()).not.toContain("Held back");
      expect(cli.child.exitCode).toBe(null);
      cli.child.stdin?.write("\u0011");
      const result = await cli.done;
      expect(result.stdout).toContain("Held back until Ctrl-Q.");
      expect(result.code).toBe(0);
    });

    it("Ctrl-C typed while no question is open cancels the run", async () => {
      server.upstream.enqueue(THINKING);
      const cli = start();
      await cli.waitFor(/Thinking/, "stdout");
      cli.child.stdin?.write("\u0003");
      const result = await cli.done;
      expect(result.stdout).toContain("[run] cancelling (Ctrl-C again to leave without waiting)");
      expect(result.stdout).toMatch(/\[run\] aborted: .*the run was cancelled by a DELETE/);
      expect(await get(`/runs/${runOf(result.stdout)}`)).toMatchObject({ status: "finished", stopReason: "aborted" });
      expect(result.code).toBe(130);
    });
  });

  it("a prompt typed on the terminal (`run -`, ended with Ctrl-D) leaves no terminal to ask: the call is denied and said so, not waited on", async () => {
    const cli = startCli({ args: ["run", "-"], env: env(), pty: true });
    onTestFinished(() => {
      if (cli.child.exitCode === null) cli.child.kill();
    });
    cli.child.stdin?.write("Create hello.txt saying hello, world\n\u0004");
    // Before: the question was asked on a stdin already read to its end, and waited for ever.
    await cli.waitFor(/\[approval\] no terminal to ask, so it is denied/, "stdout");
    const result = await cli.done;
    expect(result.stdout).toContain("[approval] write_file denied: no terminal to ask: denied by agent-server");
    expect(result.stdout).not.toContain("Allow this call?");
    expect(existsSync(await workspaceFile(sessionOf(result.stdout), "hello.txt"))).toBe(false);
    expect(result.code).toBe(0);
  });

  it("escapes control characters of the model's answer on a terminal", async () => {
    server.upstream.enqueue({ text: "\u001b]0;pwned\u0007\u001b[1Adone" });
    const result = await runCli({ args: ["run", "Say something"], env: env(), pty: true });
    expect(result.stdout).toContain("\\u001b]0;pwned\\u0007\\u001b[1Adone");
    expect(result.stdout).not.toContain("\u001b");
    expect(result.code).toBe(0);
  });

  it("Ctrl-C cancels the run (DELETE), waits for its end and exits 130", async () => {
    server.upstream.enqueue(THINKING);
    const cli = startCli({ args: ["run", "Think for ever"], env: env() });
    await cli.waitFor(/Thinking/, "stdout");
    cli.child.kill("SIGINT");
    const result = await cli.done;
    expect(result.stderr).toContain("[run] cancelling (Ctrl-C again to leave without waiting)\n");
    expect(result.stderr).toMatch(
      /\[run\] aborted: .*the run was cancelled by a DELETE \/runs\/\{id\} request; start a new run to continue \(.*\)\n$/,
    );
    expect(result.stdout).toBe("Thinking\n");
    expect(await get(`/runs/${runOf(result.stderr)}`)).toMatchObject({ status: "finished", stopReason: "aborted" });
    expect(result.code).toBe(130);
  });

  it("a second Ctrl-C leaves at once, while the server goes on cancelling", async () => {
    const proxy = await startTcpProxy(Number(new URL(server.url).port));
    try {
      server.upstream.enqueue(THINKING);
      const cli = startCli({ args: ["run", "Think for ever"], env: { ...env(), AGENT_URL: proxy.url } });
      await cli.waitFor(/Thinking/, "stdout");
      proxy.stall(); // run.finished cannot reach the client now
      cli.child.kill("SIGINT");
      await cli.waitFor(/cancelling/);
      cli.child.kill("SIGINT");
      const result = await cli.done;
      const runId = runOf(result.stderr);
      // The stalled proxy holds back the answer to the DELETE too: the client cannot know it arrived.
      expect(result.stderr).toContain(
        `[run] left without waiting for the end; the server has not confirmed the cancel yet (to be sure: curl -H "Authorization: Bearer $AGENT_API_KEY" -X DELETE ${proxy.url}/runs/${runId})\n`,
      );
      expect(result.stderr).not.toContain("[run] aborted");
      expect(result.code).toBe(130);
      await expect.poll(async () => (await get(`/runs/${runId}`)).stopReason).toBe("aborted");
    } finally {
      await proxy.close();
    }
  });

  // A start whose connection broke after the server got it was said as a server to start
  // (ECONNREFUSED's words), exit 66, though the run was going: it is asked again under its
  // Idempotency-Key, and the client follows the one run the server made.
  it("a start whose answer is lost to a connection reset follows the run the server started", async () => {
    const proxy = await startTcpProxy(Number(new URL(server.url).port));
    try {
      proxy.resetAnswerTo(/^POST \/sessions\/[^/\s]+\/runs HTTP/m);
      const result = await runCli({ args: ["run", "hello there"], env: { ...env(), AGENT_URL: proxy.url } });
      expect(result.stderr).toMatch(/the connection .* broke .*ECONNRESET.*; asking again for the same run/);
      expect(result.stderr).not.toMatch(/start it \(npm start\)/);
      expect((await get(`/sessions/${sessionOf(result.stderr)}/runs`)).items).toHaveLength(1);
      expect(result.stdout).toBe("You said: hello there\n");
      expect(result.code).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  // The preview of a call's input was quadratic in a run of newlines (test/cli/previews.test.ts):
  // such a call froze the client, which never showed the run's end.
  it("follows a run whose call's arguments hold 300,000 newlines to its end", async () => {
    const args = `{"path":${"\n".repeat(300_000)}"."}`;
    server.upstream.enqueue({ toolCalls: [{ id: "call_1", name: "list_files", arguments: args }] }, { text: "Done." });
    const cli = startCli({ args: ["run", "list the workspace"], env: env() });
    const timer = setTimeout(() => cli.child.kill("SIGKILL"), 15_000);
    const result = await cli.done.finally(() => clearTimeout(timer));
    expect(result.signal).toBeNull();
    expect(result.stderr).toContain('[tool] list_files {"path": (+300000 lines)\n');
    expect(result.stdout).toBe("Done.\n");
    expect(result.code).toBe(0);
  });

  it("exits 1 when the run ends in error, and says why", async () => {
    const result = await runCli({ args: ["run", "Fail"], env: env() });
    expect(result.stderr).toMatch(/\[run\] error: .*this model refuses.*\(0 turns, 0 tool calls\)\n$/);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(1);
  });

  it("exits 2 when the turn budget (--max-turns) is spent", async () => {
    const result = await runCli({ args: ["run", "--max-turns", "1", "What files are in the workspace?"], env: env() });
    expect(await get(`/runs/${runOf(result.stderr)}`)).toMatchObject({ maxTurns: 1, stopReason: "max_turns" });
    expect(result.stderr).toContain(
      `[run] max_turns: the turn budget of 1 is spent; go on with --session ${sessionOf(result.stderr)}, or allow more with --max-turns (1 turn, 1 tool call)\n`,
    );
    expect(result.code).toBe(2);
  });

  it("--system, --model and --workspace set up the new session; a prompt of - is read from stdin", async () => {
    const result = await runCli({
      args: ["run", "--system", "Be brief.", "--model", "other-model", "--workspace", "shared-one", "-"],
      env: env(),
      stdin: "Hello there\n",
    });
    expect(result.stdout).toBe("You said: Hello there\n");
    expect(await get(`/sessions/${sessionOf(result.stderr)}`)).toMatchObject({
      system: "Be brief.",
      model: "other-model",
      workspace: "shared-one",
      workspaceShared: true,
    });
    const sent = server.upstream.requests.at(-1)?.body;
    expect(sent.model).toBe("other-model");
    expect(sent.messages[0]).toEqual({ role: "system", content: "Be brief." });
    expect(result.code).toBe(0);
  });

  it("shows tool output with its control characters escaped (a file cannot drive the terminal)", async () => {
    const session = (await server.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const file = await workspaceFile(session.id, "hello.txt");
    writeFileSync(file, "\u001b]0;pwned\u0007\u001b[2Khello, world\n");
    const result = await runCli({ args: ["run", "-s", session.id, "What does hello.txt say?"], env: env() });
    expect(result.stderr).toContain("[tool] read_file done:");
    expect(result.stderr).toContain("\\u001b]0;pwned\\u0007\\u001b[2Khello, world");
    expect([...result.stderr].filter((c) => c < " " && c !== "\n")).toEqual([]);
    expect(result.code).toBe(0);
  });

  it("reconnects with Last-Event-ID when the event stream drops mid-run", async () => {
    const proxy = await startTcpProxy(Number(new URL(server.url).port));
    try {
      let release: () => void = () => {};
      server.upstream.enqueue({ text: ["Hello, ", "world."], gate: new Promise<void>((r) => (release = r)) });
      const cli = startCli({ args: ["run", "Greet me"], env: { ...env(), AGENT_URL: proxy.url } });
      await cli.waitFor(/Hello, world\./, "stdout");
      const streams = () => proxy.heads().filter((head) => head.startsWith("GET /runs/"));
      expect(streams()).toHaveLength(1);
      proxy.dropAll();
      await cli.waitFor(/\[stream\] lost/);
      await expect.poll(() => streams().length).toBe(2);
      release();
      const result = await cli.done;
      expect(streams()[1]).toMatch(/\r\nlast-event-id: [1-9]\d*\r\n/i);
      expect(result.stderr).toMatch(/\[stream\] lost \(.+\); reconnecting after event [1-9]\d*\n/);
      expect(result.stdout).toBe("Hello, world.\n");
      expect(result.code).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  /**
   * Runs `scenario` with the client talking through a proxy to a server that it may
   * `restart()` (as on SIGTERM with ON_RESTART=resume, then a new start over the same data).
   */
  async function acrossRestart(
    scenario: (ctx: {
      url: string;
      /** `stop()` then `start()`. */
      restart: () => Promise<void>;
      stop: () => Promise<void>;
      start: () => Promise<TestServer>;
      upstream: FakeUpstream;
    }) => Promise<void>,
  ) {
    const upstream = await startFakeUpstream();
    upstream.fallback = cliModel;
    const first = await startTestServer({ upstream });
    const proxy = await startTcpProxy(Number(new URL(first.url).port));
    let second: TestServer | undefined;
    try {
      const stop = async () => {
        await first.ctx.manager.shutdown({ graceMs: 2000, resume: true });
        await first.close({ keepDir: true });
        await proxy.goDown();
      };
      const start = async () => {
        second = await startTestServer({ dir: first.dir, upstream });
        proxy.retarget(Number(new URL(second.url).port));
        await proxy.comeBack();
        return second;
      };
      await scenario({
        url: proxy.url,
        upstream,
        stop,
        start,
        restart: async () => {
          await stop();
          await start();
        },
      });
    } finally {
      await second?.close();
      await proxy.close();
      await upstream.close();
      rmSync(first.dir, { recursive: true, force: true });
    }
  }

  it("follows a run across a server restart: reconnects, notes the turn asked again, and ends with it", async () => {
    await acrossRestart(async ({ url, restart, upstream }) => {
      upstream.enqueue({ text: ["Working"], hang: "after-chunks", afterChunks: 2 }, { text: "Done." });
      const cli = startCli({ args: ["run", "Work"], env: { AGENT_URL: url } });
      await cli.waitFor(/Working/, "stdout");
      await restart();
      const result = await cli.done;
      expect(result.stderr).toMatch(/\[stream\] lost \(.+\); reconnecting after event \d+\n/);
      expect(result.stderr).toContain("[turn 1 is asked again as turn 2: the server restarted during it]\n");
      expect(result.stdout).toBe("Working\nDone.\n");
      expect(result.stderr).toMatch(/\[run\] complete \(1 turn, 0 tool calls\)\n$/);
      expect(result.code).toBe(0);
    });
  });

  it("Ctrl-C while the server is away: the cancel is delivered once it is back", async () => {
    await acrossRestart(async ({ url, stop, start, upstream }) => {
      upstream.enqueue(THINKING, THINKING);
      const cli = startCli({ args: ["run", "Think for ever"], env: { AGENT_URL: url } });
      await cli.waitFor(/Thinking/, "stdout");
      await stop();
      await cli.waitFor(/\[stream\] lost/);
      cli.child.kill("SIGINT");
      await cli.waitFor(/\[run\] cancelling/);
      const restarted = await start();
      const result = await cli.done;
      expect(result.stderr).not.toContain("the cancel was not delivered");
      expect(result.stderr).toMatch(/\[run\] aborted: .*the run was cancelled by a DELETE/);
      expect((await restarted.request("GET", `/runs/${runOf(result.stderr)}`)).body.stopReason).toBe("aborted");
      expect(result.code).toBe(130);
    });
  });

  it("an answer given while the server is away reaches it once it is back", async () => {
    await acrossRestart(async ({ url, stop, start }) => {
      const cli = startCli({
        args: ["run", "Create hello.txt saying hello, world"],
        env: { AGENT_URL: url },
        pty: true,
      });
      await cli.waitFor(/Allow this call\? \[y\/N\] $/, "stdout");
      await stop();
      cli.child.stdin?.write("y\r");
      // Notes wait under an open question: the lost stream is told once it is answered.
      await cli.waitFor(/\[y\/N\] y\r*\n\[stream\] lost/, "stdout");
      await start();
      const result = await cli.done;
      expect(result.stdout).not.toContain("not delivered");
      expect(result.stdout).toContain("[approval] write_file approved: approved at the terminal");
      expect(result.stdout).toContain("Created hello.txt.");
      expect(result.stdout.match(/Allow this call/g)).toHaveLength(1);
      expect(result.code).toBe(0);
    });
  });

  it("a busy session is one line on stderr and exit 68", async () => {
    const session = (await server.request("POST", "/sessions", { body: {}, headers: auth })).body;
    const active = (
      await server.request("POST", `/sessions/${session.id}/runs`, {
        body: { input: "Run the test suite" },
        headers: auth,
      })
    ).body;
    try {
      const result = await runCli({ args: ["run", "--session", session.id, "Hello"], env: env() });
      expect(result.stderr).toBe(
        `session ${session.id}\nagent-server: the session already has an active run, ${active.id} (409 SESSION_BUSY): wait for it to end, cancel it (curl -H "Authorization: Bearer $AGENT_API_KEY" -X DELETE ${server.url}/runs/${active.id}), or leave out --session to start in a new session\n`,
      );
      expect(result.code).toBe(68);
    } finally {
      await server.request("DELETE", `/runs/${active.id}`, { headers: auth });
    }
  });

  it("a full server (429) is one line on stderr and exit 69", async () => {
    const full = await startTestServer({ env: { MAX_CONCURRENT_RUNS: "1" } });
    full.upstream.fallback = cliModel;
    try {
      const session = (await full.request("POST", "/sessions", { body: {} })).body;
      await full.request("POST", `/sessions/${session.id}/runs`, { body: { input: "Run the test suite" } });
      const result = await runCli({ args: ["run", "Hello"], env: { AGENT_URL: full.url } });
      expect(result.stderr).toMatch(
        /^session ses_\w+\nagent-server: the server cannot take this request now \(429 TOO_MANY_RUNS: .+\): retry in 1 s\n$/,
      );
      expect(result.code).toBe(69);
    } finally {
      await full.close();
    }
  });

  it("says in one line what to do when the server cannot be used, each with its exit code", async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const cases: Array<{ env: Record<string, string>; args?: string[]; code: number; line: string }> = [
      { env: { AGENT_URL: server.url }, code: 67, line: "the server wants an API key (401): set AGENT_API_KEY" },
      {
        env: { AGENT_URL: server.url, AGENT_API_KEY: "not-a-key-of-this-server" },
        code: 67,
        line: "the server refused the key in AGENT_API_KEY (401)",
      },
      { env: { AGENT_URL: nobody }, code: 66, line: `cannot reach the server at ${nobody} (ECONNREFUSED): start it` },
      {
        env: { AGENT_URL: "localhost:3000" },
        code: 65,
        line: 'AGENT_URL must be an http:// or https:// URL, not "localhost:3000"',
      },
      {
        env: env(),
        args: ["run", "--session", "ses_nope", "Hello"],
        code: 70,
        line: "no session ses_nope on this server (404): check --session",
      },
      { env: env(), args: ["run"], code: 64, line: "the prompt is missing" },
    ];
    const results = await Promise.all(cases.map((c) => runCli({ args: c.args ?? ["run", "Hello"], env: c.env })));
    results.forEach((result, i) => {
      const errorLines = result.stderr.split("\n").filter((line) => line.startsWith("agent-server: "));
      expect(errorLines, result.stderr).toHaveLength(1);
      expect(errorLines[0]).toContain(cases[i]?.line);
      expect(result.stdout).toBe("");
      expect(result.code, result.stderr).toBe(cases[i]?.code);
    });
  });

  it("--help and --version", async () => {
    const [help, version] = await Promise.all([
      runCli({ args: ["--help"], env: {} }),
      runCli({ args: ["--version"], env: {} }),
    ]);
    expect(help.stdout).toMatch(/^agent-server: the command-line client/);
    expect(help.stdout).toContain("68 session busy");
    expect(help.code).toBe(0);
    const { version: packaged } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    expect(version.stdout).toBe(`agent-server ${packaged}\n`);
    expect(version.code).toBe(0);
  });
});
