/** The client's pure parts: exit codes, the SSE parser, the command line and AGENT_URL. */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ApiClient } from "../../src/cli/api-client.js";
import { parseCommand } from "../../src/cli/args.js";
import { CliError } from "../../src/cli/cli-error.js";
import { EXIT, exitCodeForStopReason } from "../../src/cli/exit-codes.js";
import { followRunEvents } from "../../src/cli/follow-events.js";
import { printable } from "../../src/cli/printable.js";
import { readSse } from "../../src/cli/sse-reader.js";
import { answerCapFromEnv, targetFromEnv } from "../../src/cli/target.js";
import { Outputs } from "../../src/cli/terminal-out.js";
import { Transcript } from "../../src/cli/transcript.js";
import { freePort } from "../helpers/child-server.js";

describe("the client's exit code for a finished run", () => {
  it("maps every stop reason, the guards' included, and counts an unknown one as an error", () => {
    expect(
      ["complete", "error", "max_turns", "loop_detected", "budget_exhausted", "aborted", "something_new", null].map(
        exitCodeForStopReason,
      ),
    ).toEqual([0, 1, 2, 3, 3, 130, 1, 1]);
  });

  it("keeps the client's own failures apart from the runs' outcomes and from each other", () => {
    const codes = Object.values(EXIT);
    expect(new Set(codes).size).toBe(codes.length);
  });
});

async function frames(...chunks: string[]) {
  return framesWithin(undefined, ...chunks);
}

async function framesWithin(maxChars: number | undefined, ...chunks: string[]) {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });
  const out = [];
  for await (const frame of readSse(body, { maxChars })) out.push(frame);
  return out;
}

describe("the SSE reader", () => {
  it("reads frames split anywhere, with LF, CRLF or CR line ends, comments and multi-line data", async () => {
    expect(
      await frames(
        ": heartbeat\n\nid: 1\nevent: run.started\nda",
        'ta: {"a":1}\r',
        "\n\r\nid: 2\revent: message\rdata: x\rdata:y\r\r",
        "data: no id\n\nid: 3\nevent: ignored\n\n",
      ),
    ).toEqual([
      { id: "1", event: "run.started", data: '{"a":1}' },
      { id: "2", event: "message", data: "x\ny" },
      { id: null, event: "message", data: "no id" },
    ]);
  });

  it("reads an event up to its limit, in pieces of any size, and refuses one past it (a line or data lines)", async () => {
    const data = "x".repeat(70_000);
    const pieces = [`id: 1\ndata: ${data.slice(0, 5)}`, ...data.slice(5).match(/.{1,7}/gs)!, "\ndata: y\n\n"];
    expect(await framesWithin(80_000, ...pieces)).toEqual([{ id: "1", event: "message", data: `${data}\ny` }]);
    const refused = (promise: Promise<unknown>) =>
      expect(promise).rejects.toMatchObject({ exitCode: EXIT.server, message: expect.stringMatching(/more than/) });
    await refused(framesWithin(1000, `data: ${"a".repeat(600)}`, "a".repeat(600)));
    await refused(framesWithin(1000, "data: x\n".repeat(200)));
    // Lines that are not data (heartbeats, ids) are not kept, so they do not count.
    expect(await framesWithin(1000, ": ping\nid: 1\n".repeat(200), "data: z\n\n")).toHaveLength(1);
  });

  it("decodes UTF-8 split across chunks", async () => {
    const bytes = new TextEncoder().encode("data: héllo ✓\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
        controller.close();
      },
    });
    const out = [];
    for await (const frame of readSse(body)) out.push(frame.data);
    expect(out).toEqual(["héllo ✓"]);
  });
});

describe("the command line", () => {
  it("joins the prompt's words and reads --approve lists", () => {
    const command = parseCommand(["run", "-a", "write_file,shell", "--approve", "edit_file", "what", "is", "here?"]);
    expect(command).toMatchObject({ kind: "run", options: { prompt: "what is here?", json: false } });
    if (command.kind !== "run") throw new Error("not a run");
    expect([...command.options.approve.tools].sort()).toEqual(["edit_file", "shell", "write_file"]);
    expect(command.options.approve.all).toBe(false);
    const all = parseCommand(["run", "--approve", "all", "x"]);
    expect(all.kind === "run" && all.options.approve.all).toBe(true);
  });

  it("refuses a bad one with a usage error that says what is wrong", () => {
    const refusal = (argv: string[]) => {
      try {
        parseCommand(argv);
      } catch (error) {
        return error instanceof CliError ? [error.exitCode, error.message] : error;
      }
      return null;
    };
    expect(refusal(["run", "--approve", "shell,", "x"])).toEqual([
      64,
      expect.stringContaining("--approve takes tool names"),
    ]);
    expect(refusal(["run", "--frobnicate", "x"])).toEqual([
      64,
      expect.stringContaining("Unknown option '--frobnicate'"),
    ]);
    expect(refusal(["run", "-s", "ses_x", "--model", "m", "x"])).toEqual([
      64,
      "--model sets up a new session: not with --session (see agent-server --help)",
    ]);
    expect(refusal(["run", "--max-turns", "0", "x"])).toEqual([64, expect.stringContaining("--max-turns must be")]);
    expect(refusal(["walk", "x"])).toEqual([64, expect.stringContaining('unknown command "walk"')]);
  });
});

describe("AGENT_URL", () => {
  it("defaults to the server's default address and keeps a path prefix without its trailing slash", () => {
    expect(targetFromEnv({})).toEqual({ baseUrl: "http://127.0.0.1:3000", apiKey: null });
    expect(targetFromEnv({ AGENT_URL: "https://agents.example.com/api/", AGENT_API_KEY: "k" })).toEqual({
      baseUrl: "https://agents.example.com/api",
      apiKey: "k",
    });
  });

  it("refuses what it cannot use, with the configuration exit code", () => {
    for (const env of [
      { AGENT_URL: "http://" },
      { AGENT_URL: "http://u:p@127.0.0.1:3000" },
      { AGENT_URL: "http://127.0.0.1:3000/?x=1" },
      { AGENT_API_KEY: "two words" },
    ]) {
      expect(() => targetFromEnv(env)).toThrow(expect.objectContaining({ exitCode: EXIT.config }));
    }
    expect(() => targetFromEnv({ AGENT_URL: "http://" })).toThrow('AGENT_URL is not a URL: "http://"');
    expect(() => targetFromEnv({ AGENT_URL: "http://u:p@127.0.0.1:3000" })).toThrow(/must not hold credentials/);
    expect(() => targetFromEnv({ AGENT_URL: "http://127.0.0.1:3000/?x=1" })).toThrow(/without \?query/);
  });
});

describe("following a run's events", () => {
  it("gives up with the unreachable exit code when the server stays away, having said so once", async () => {
    const client = new ApiClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, apiKey: null });
    const told: string[] = [];
    const events = followRunEvents({ client, runId: "run_x", giveUpMs: 500, onReconnect: (i) => told.push(i.reason) });
    const failure = await events.next().then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ exitCode: EXIT.unreachable });
    expect(String(failure)).toMatch(
      /lost the events of run run_x and got nothing back for 1 s \(cannot reach .*ECONNREFUSED/,
    );
    expect(told).toHaveLength(1);
  });
});

describe("a run's events kept by the caller", () => {
  it("the time the caller keeps a frame (its output stopped) is not the server's silence: no reconnect", async () => {
    let connections = 0;
    const server = createServer((_request, response) => {
      connections++;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write('id: 1\nevent: run.started\ndata: {"type":"run.started"}\n\n');
      const heartbeat = setInterval(() => response.write(": heartbeat\n\n"), 50);
      setTimeout(() => {
        clearInterval(heartbeat);
        response.end('id: 2\nevent: run.finished\ndata: {"type":"run.finished"}\n\n');
      }, 700);
      response.on("close", () => clearInterval(heartbeat));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const { port } = server.address() as AddressInfo;
      const client = new ApiClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: null });
      const told: string[] = [];
      const events = followRunEvents({ client, runId: "run_x", idleMs: 200, onReconnect: (i) => told.push(i.reason) });
      expect((await events.next()).value).toMatchObject({ id: "1" });
      // Held three times the idle limit, as Ctrl-S holds it, while the server's heartbeats wait unread.
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect((await events.next()).value).toMatchObject({ id: "2", event: "run.finished" });
      expect([told, connections]).toEqual([[], 1]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("the transcript's last line", () => {
  it("a run a guard stopped ends with the server's stop detail", () => {
    const notes: string[] = [];
    const out = new Outputs({ write: () => {} }, { write: (line: string) => notes.push(line) });
    const detail =
      'stopped after turn 3: read_file {"path":"a.md"} failed with NOT_FOUND 3 times in a row; check the path';
    new Transcript(out).show({
      type: "run.finished",
      run: {
        id: "run_1",
        status: "finished",
        stopReason: "loop_detected",
        stopDetail: detail,
        error: null,
        stats: { turns: 3, toolCalls: 3 },
      },
    });
    expect(notes.join("")).toBe(`[run] loop_detected: ${detail} (3 turns, 3 tool calls)\n`);
  });
});

describe("the transcript's memory of tool calls", () => {
  it("holds a call's name and input until its result is shown, so a long run does not grow it", () => {
    const notes: string[] = [];
    const out = new Outputs({ write: () => {} }, { write: (line: string) => notes.push(line) });
    const transcript = new Transcript(out);
    for (let i = 0; i < 100; i++) {
      const call = { id: `call_${i}`, name: "read_file", input: JSON.stringify({ path: `f${i}.md` }) };
      transcript.show({ type: "message", message: { role: "assistant", content: "", toolCalls: [call] } } as never);
      transcript.show({ type: "tool.started", toolCallId: call.id, tool: "read_file" } as never);
      expect(transcript.openCalls).toBe(1);
      transcript.show({
        type: "message",
        message: { role: "tool", toolCallId: call.id, content: "text", isError: false },
      } as never);
      expect(transcript.openCalls).toBe(0);
    }
    expect(notes.filter((line) => line.startsWith("[tool] read_file done"))).toHaveLength(100);
    expect(notes).toContain('[tool] read_file {"path":"f99.md"}\n');
  });
});

describe("AGENT_MAX_ANSWER_MIB", () => {
  it("is 128 MiB by default, a whole number of MiB from 1 to 4096, else a config error", () => {
    expect(answerCapFromEnv({})).toBe(128 * 1024 * 1024);
    expect(answerCapFromEnv({ AGENT_MAX_ANSWER_MIB: "16" })).toBe(16 * 1024 * 1024);
    for (const value of ["0", "4097", "1.5", "16M", "-1"]) {
      expect(() => answerCapFromEnv({ AGENT_MAX_ANSWER_MIB: value }), value).toThrow(
        expect.objectContaining({ exitCode: EXIT.config }),
      );
    }
  });
});

describe("a turn's text from a server that never stops sending it", () => {
  it("past maxTurnChars ends the client as a server error (exit 70); a new turn starts the count again", () => {
    const out = new Outputs({ write: () => {} }, { write: () => {} });
    const transcript = new Transcript(out, { maxTurnChars: 1000 });
    const delta = { type: "text.delta", text: "x".repeat(100) } as const;
    transcript.show({ type: "turn.started", turn: 1 } as never);
    for (let i = 0; i < 10; i++) transcript.show(delta as never);
    transcript.show({ type: "turn.started", turn: 2 } as never);
    for (let i = 0; i < 10; i++) transcript.show(delta as never);
    let error: unknown = null;
    try {
      transcript.show(delta as never);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.server);
    expect((error as CliError).message).toMatch(/a turn of more than 1000 characters/);
  });
});

describe("the output stopped by Ctrl-S", () => {
  it("writes nothing after saying so until started, then what waited in order; whoever waits on flowing goes on then", async () => {
    const written: string[] = [];
    const terminal = { write: (text: string) => written.push(text), isTTY: true };
    const out = new Outputs(terminal, terminal);
    out.text("before");
    out.stop();
    const flowing = out.flowing().then(() => written.push("(flowing)"));
    out.text(" held");
    out.note("[run] a note");
    out.endLine();
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual(["before", "\n[output] stopped (Ctrl-S): Ctrl-Q goes on\n"]);
    out.start();
    await flowing;
    expect(written.slice(2)).toEqual([" held", "\n[run] a note\n", "(flowing)"]);
    await out.flowing();
  });
});

describe("text shown on the terminal", () => {
  it("shows control, bidirectional and zero-width characters as escapes, so a command reads as it runs", () => {
    expect(printable("echo safe \u202e# ~ fr- mr\u202c; rm -rf ~\u200b")).toBe(
      "echo safe \\u202e# ~ fr- mr\\u202c; rm -rf ~\\u200b",
    );
    expect(printable("a\u001b[2Jb\u009bc\u2066d\ufeff")).toBe("a\\u001b[2Jb\\u009bc\\u2066d\\ufeff");
    expect(printable("line one\n\tline two", { keepLines: true })).toBe("line one\n\tline two");
    expect(printable("héllo wörld ✓ 日本")).toBe("héllo wörld ✓ 日本");
  });
});
