/**
 * The client against servers that misbehave as a broken proxy, a full server or a hostile one
 * would: each failure is one clear `CliError` with the right exit code, never a crash, a lie
 * or an endless loop.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ApiClient } from "../../src/cli/api-client.js";
import { Approvals } from "../../src/cli/approvals.js";
import { parseCommand } from "../../src/cli/args.js";
import { CliError } from "../../src/cli/cli-error.js";
import { EXIT } from "../../src/cli/exit-codes.js";
import { followRunEvents } from "../../src/cli/follow-events.js";
import type { CliIo } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";
import { RunCancel } from "../../src/cli/run-cancel.js";
import { refusalError } from "../../src/cli/server-errors.js";
import { startRun } from "../../src/cli/start-run.js";
import { Outputs } from "../../src/cli/terminal-out.js";
import { RunBody } from "../../src/cli/wire.js";

const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A local server answering every request with `handle`; resolves with a client for it. */
async function serve(
  handle: (request: IncomingMessage, response: ServerResponse) => void,
  apiKey: string | null = null,
) {
  const server = createServer(handle);
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return new ApiClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey });
}

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => error,
  );

/** Every event of `events` until it ends or throws: the frames and the error. */
async function drain(events: AsyncGenerator<{ id: string | null; event: string }>) {
  const frames: { id: string | null; event: string }[] = [];
  try {
    for await (const frame of events) frames.push(frame);
    return { frames, error: null };
  } catch (error) {
    return { frames, error };
  }
}

const runJson = { id: "run_1", status: "running", sessionId: "ses_1", stopReason: null, error: null };

function notes() {
  const lines: string[] = [];
  return { lines, out: new Outputs({ write: () => {} }, { write: (line: string) => lines.push(line) }) };
}

describe("a JSON answer cut off mid-way", () => {
  it("is the server gone (exit 66, retryable), not a crash of the client", async () => {
    const client = await serve((_request, response) => {
      response.writeHead(201, { "content-type": "application/json", "content-length": "100" });
      response.write('{"id":"ses');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    const error = await failureOf(client.json({ method: "POST", path: "/sessions", body: {}, schema: RunBody }));
    expect(error).toBeInstanceOf(CliError);
    expect(error).toMatchObject({ exitCode: EXIT.unreachable, retryable: true, maybeDone: true });
    expect(String(error)).toMatch(/POST \/sessions: the answer of the server at .* was cut off/);
  });
});

describe("a run start whose answer is cut off", () => {
  it("is asked again under the same Idempotency-Key, and the client follows the run the server started", async () => {
    const keys: (string | undefined)[] = [];
    const client = await serve((request, response) => {
      keys.push(request.headers["idempotency-key"] as string | undefined);
      const run = JSON.stringify({ id: "run_1", status: "running", sessionId: "ses_1", stopReason: null, error: null });
      if (keys.length === 1) {
        response.writeHead(201, { "content-type": "application/json", "content-length": String(run.length + 50) });
        response.write(run.slice(0, 10));
        setTimeout(() => response.socket?.destroy(), 20);
      } else {
        response.writeHead(201, { "content-type": "application/json", "idempotent-replayed": "true" });
        response.end(run);
      }
    });
    const { lines, out } = notes();
    const run = await startRun({ client, out, sessionId: "ses_1", body: { input: "hi" } });
    expect(run.id).toBe("run_1");
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(lines.join("")).toMatch(
      /\[run\] POST \/sessions\/ses_1\/runs: the answer .* was cut off .*; asking again for the same run/,
    );
  });

  it("a start refused at once (429) is not asked again", async () => {
    let requests = 0;
    const client = await serve((_request, response) => {
      requests++;
      response.writeHead(429, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { code: "TOO_MANY_RUNS", message: "full" } }));
    });
    const error = await failureOf(startRun({ client, out: notes().out, sessionId: "ses_1", body: { input: "hi" } }));
    expect(error).toMatchObject({ exitCode: EXIT.retryLater });
    expect(requests).toBe(1);
  });
});

// A start whose connection broke after it was sent, or that a proxy answered 502/503/504 for,
// was thrown as it came: said as a server to start (ECONNREFUSED's words) or as no agent server,
// though the run may have been made. It is asked again under the same Idempotency-Key.
describe("a run start whose answer is lost before it comes", () => {
  it("a connection closed after the request reached the server: asked again under the same key", async () => {
    const keys: (string | undefined)[] = [];
    const client = await serve((request, response) => {
      request.resume();
      request.on("end", () => {
        keys.push(request.headers["idempotency-key"] as string | undefined);
        // The run was made; the process dies before its answer is written.
        if (keys.length === 1) request.socket.destroy();
        else response.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify(runJson));
      });
    });
    const { lines, out } = notes();
    const run = await startRun({ client, out, sessionId: "ses_1", body: { input: "hi" } });
    expect(run.id).toBe("run_1");
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(lines.join("")).toMatch(/the connection to the server at .* broke .*; asking again for the same run/);
    expect(lines.join("")).not.toMatch(/start it \(npm start\)/);
  });

  it("a proxy's 504 without the server's error envelope: asked again under the same key", async () => {
    const keys: (string | undefined)[] = [];
    const client = await serve((request, response) => {
      request.resume();
      request.on("end", () => {
        keys.push(request.headers["idempotency-key"] as string | undefined);
        if (keys.length === 1) {
          response
            .writeHead(504, { "content-type": "text/html" })
            .end("<html><body>504 Gateway Time-out</body></html>");
        } else response.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify(runJson));
      });
    });
    const run = await startRun({ client, out: notes().out, sessionId: "ses_1", body: { input: "hi" } });
    expect(run.id).toBe("run_1");
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
  });

  it("the server's own 503 (its error envelope: it made no run) is not asked again", async () => {
    let requests = 0;
    const client = await serve((_request, response) => {
      requests++;
      response.writeHead(503, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { code: "SHUTTING_DOWN", message: "shutting down" } }));
    });
    const error = await failureOf(startRun({ client, out: notes().out, sessionId: "ses_1", body: { input: "hi" } }));
    expect(error).toMatchObject({ exitCode: EXIT.retryLater });
    expect(requests).toBe(1);
  });
});

describe("an approval answer that fails in an unforeseen way", () => {
  it("is said, and the next requests are still answered", async () => {
    const sent: string[] = [];
    const client = {
      json: ({ path }: { path: string }) => {
        sent.push(path);
        return Promise.reject(new TypeError("terminated"));
      },
    } as unknown as ApiClient;
    const { lines, out } = notes();
    const approvals = new Approvals({
      client,
      runId: "run_1",
      approve: { all: true, tools: new Set() },
      ask: null,
      out,
    });
    const request = (toolCallId: string) => ({ toolCallId, tool: "shell", reason: "asks", input: {} }) as never;
    approvals.requested(request("call_1"));
    approvals.requested(request("call_2"));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sent).toEqual(["/runs/run_1/approvals/call_1", "/runs/run_1/approvals/call_2"]);
    expect(lines.filter((line) => line.includes("the decision was not delivered: terminated"))).toHaveLength(2);
  });
});

describe("a second Ctrl-C while the run is being started", () => {
  it("says a run may have started, and where to find it", () => {
    const { lines, out } = notes();
    const cancel = new RunCancel({ client: { target: { baseUrl: "http://h:1", apiKey: "k" } } as ApiClient, out });
    cancel.starting("ses_1");
    cancel.interrupt();
    cancel.interrupt();
    expect(lines.at(-1)).toMatch(/left without waiting.*a run may have started in session ses_1/);
    expect(lines.at(-1)).toContain('curl -H "Authorization: Bearer $AGENT_API_KEY" http://h:1/sessions/ses_1/runs');
  });
});

// The commands the client tells the user to type (curl ... to cancel or find a run) put the
// server's ids into a shell line raw: a hostile server's run id "run_1 $(touch ...)" made the
// suggestion a command of its own. Each id there is percent-encoded down to one plain word.
describe("commands suggested with a hostile server's ids", () => {
  const EVIL = "run_1 $(touch /tmp/pwned-by-agent-server) `id` 'q' !x *";
  const ENCODED = "run_1%20%24%28touch%20%2Ftmp%2Fpwned-by-agent-server%29%20%60id%60%20%27q%27%20%21x%20%2A";
  /** The curl commands in `text`, each up to the parenthesis that closes it. */
  const commands = (text: string) => [...text.matchAll(/curl [^\n]*?(?=\)(?:,|\)|$|\n))/g)].map((m) => m[0]);

  it("SESSION_BUSY's run id in the cancel command (the whole client, exit 68)", async () => {
    const client = await serve((request, response) => {
      request.resume();
      response.writeHead(409, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { code: "SESSION_BUSY", message: "busy", details: { runId: EVIL } } }));
    });
    const stderr: string[] = [];
    const io = {
      stdin: {},
      stdout: { write: () => true },
      stderr: { write: (text: string) => stderr.push(text) },
      env: { AGENT_URL: client.target.baseUrl },
      onInterrupt: () => () => {},
    } as unknown as CliIo;
    expect(await main(["run", "--session", "ses_1", "hello"], io)).toBe(EXIT.busy);
    const said = stderr.join("");
    expect(commands(said)).toEqual([`curl -X DELETE ${client.target.baseUrl}/runs/${ENCODED}`]);
    expect(said).toContain(`the session already has an active run, ${EVIL} (409 SESSION_BUSY)`);
  });

  it("a second Ctrl-C's commands: the run's id and the session's", () => {
    const target = { baseUrl: "http://h:1", apiKey: null };
    const approvals = { stop: () => {} } as unknown as Approvals;
    const client = { target, json: () => Promise.reject(new TypeError("no")) } as unknown as ApiClient;
    const started = notes();
    const cancel = new RunCancel({ client, out: started.out });
    cancel.attach(EVIL, approvals);
    cancel.interrupt();
    cancel.interrupt();
    const starting = notes();
    const cancelStarting = new RunCancel({ client, out: starting.out });
    cancelStarting.starting(`ses_${EVIL}`);
    cancelStarting.interrupt();
    cancelStarting.interrupt();
    expect(commands(started.lines.join(""))).toEqual([`curl -X DELETE http://h:1/runs/${ENCODED}`]);
    expect(commands(starting.lines.join(""))).toEqual([`curl http://h:1/sessions/ses_${ENCODED}/runs`]);
  });
});

describe("following a run's events", () => {
  it("a stream that opens and closes without an event or a heartbeat is given up (exit 66), said once", async () => {
    let connections = 0;
    const client = await serve((_request, response) => {
      connections++;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end("retry: 2000\n\n");
    });
    const told: string[] = [];
    const events = followRunEvents({ client, runId: "run_x", giveUpMs: 600, onReconnect: (i) => told.push(i.reason) });
    const { error } = await drain(events);
    expect(error).toMatchObject({ exitCode: EXIT.unreachable });
    expect(String(error)).toMatch(/lost the events of run run_x/);
    expect(told).toHaveLength(1);
    expect(connections).toBeGreaterThan(1);
    expect(connections).toBeLessThan(10);
  });

  it("a stream that opens, says something and closes at once, again and again, is given up too", async () => {
    let connections = 0;
    const client = await serve((_request, response) => {
      connections++;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end("retry: 2000\n\n: hello\n\n");
    });
    const told: string[] = [];
    const events = followRunEvents({ client, runId: "run_x", giveUpMs: 600, onReconnect: (i) => told.push(i.reason) });
    const { error } = await drain(events);
    expect(error).toMatchObject({ exitCode: EXIT.unreachable });
    expect(told).toHaveLength(1);
    expect(connections).toBeLessThan(10);
  });

  it("streams that live with heartbeats, however often they drop, are followed to the run's end", async () => {
    let connections = 0;
    const client = await serve((_request, response) => {
      connections++;
      response.writeHead(200, { "content-type": "text/event-stream" });
      if (connections < 4) {
        response.write("retry: 2000\n\n: heartbeat\n\n");
        setTimeout(() => response.end(), 150);
      } else response.end('id: 1\nevent: run.finished\ndata: {"type":"run.finished"}\n\n');
    });
    const told: string[] = [];
    const events = followRunEvents({
      client,
      runId: "run_x",
      giveUpMs: 200,
      healthyMs: 100,
      onReconnect: (i) => told.push(i.reason),
    });
    const { frames, error } = await drain(events);
    expect(error).toBeNull();
    expect(frames.map((f) => f.event)).toEqual(["run.finished"]);
    expect(connections).toBe(4);
    // Each drop after a stream that lived is an outage of its own, said once.
    expect(told).toHaveLength(3);
  });

  it("a stream the server keeps refusing (429 TOO_MANY_STREAMS) exits 69, saying the run goes on", async () => {
    const client = await serve((_request, response) => {
      response.writeHead(429, { "content-type": "application/json", "retry-after": "5" });
      response.end(JSON.stringify({ error: { code: "TOO_MANY_STREAMS", message: "this key holds 1 stream" } }));
    }, "key-0123456789abcdef");
    const told: { refused: boolean; after: number }[] = [];
    const events = followRunEvents({ client, runId: "run_x", giveUpMs: 400, onReconnect: (i) => told.push(i) });
    const { error } = await drain(events);
    expect(error).toMatchObject({ exitCode: EXIT.retryLater });
    expect(String(error)).toMatch(
      /refused the events of run run_x and they did not come back for 0 s \(.*TOO_MANY_STREAMS[^;]*\); the run goes on in the server/,
    );
    expect(String(error)).toContain('curl -H "Authorization: Bearer $AGENT_API_KEY" -N');
    expect(String(error)).not.toContain("key-0123456789abcdef");
    expect(told).toMatchObject([{ refused: true, after: 0 }]);
  });

  it("an outage the server refused in and then fell silent in is said as both, with the refusal's exit code", async () => {
    let requests = 0;
    const client = await serve((request, response) => {
      requests++;
      if (requests === 1) {
        response.writeHead(503, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { code: "SHUTTING_DOWN", message: "restarting" } }));
      } else request.socket.destroy();
    });
    const events = followRunEvents({ client, runId: "run_x", giveUpMs: 400, onReconnect: () => {} });
    const { error } = await drain(events);
    expect(error).toMatchObject({ exitCode: EXIT.retryLater });
    expect(String(error)).toMatch(
      /\(the server cannot take this request now \(503 SHUTTING_DOWN: restarting\).*; last: /,
    );
  });

  it("a frame without an id is shown, not taken for one already seen", async () => {
    const client = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end('event: text.delta\ndata: {"text":"hi"}\n\nid: 1\nevent: run.finished\ndata: {}\n\n');
    });
    const { frames } = await drain(followRunEvents({ client, runId: "run_x", onReconnect: () => {} }));
    expect(frames.map((f) => f.event)).toEqual(["text.delta", "run.finished"]);
  });
});

describe("refusals", () => {
  it("a 403 is said in the server's words (HOST_NOT_ALLOWED is not a missing key)", () => {
    const error = refusalError(
      {
        status: 403,
        envelope: { error: { code: "HOST_NOT_ALLOWED", message: "add the name to ALLOWED_HOSTS" } } as never,
        retryAfter: null,
        request: "POST /sessions",
      },
      { baseUrl: "http://vm:3000", apiKey: null },
    );
    expect(error.message).toBe(
      "the server forbids POST /sessions (403 HOST_NOT_ALLOWED: add the name to ALLOWED_HOSTS)",
    );
    expect(error.message).not.toMatch(/API key/);
    expect(error.exitCode).toBe(EXIT.unauthorized);
  });

  it("a port that fetch refuses is a configuration error (exit 65), not a server to start", async () => {
    const client = new ApiClient({ baseUrl: "http://127.0.0.1:6000", apiKey: null });
    const error = await failureOf(client.json({ method: "POST", path: "/sessions", body: {}, schema: RunBody }));
    expect(error).toMatchObject({ exitCode: EXIT.config });
    expect(String(error)).toMatch(/fetch refuses it/);
  });
});

describe("the command line", () => {
  it.each(["--session", "--system", "--model", "--workspace"])("an empty %s is a usage error", (option) => {
    expect(() => parseCommand(["run", option, "", "hi"])).toThrow(expect.objectContaining({ exitCode: EXIT.usage }));
  });
});
