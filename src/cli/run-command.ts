import { ApiClient } from "./api-client.js";
import { Approvals, type Ask } from "./approvals.js";
import { checkApprovedTools } from "./approve-check.js";
import type { RunOptions } from "./args.js";
import { CliError } from "./cli-error.js";
import { EXIT, type ExitCode, exitCodeForStopReason } from "./exit-codes.js";
import { followRunEvents } from "./follow-events.js";
import { type CliIo, readPrompt } from "./io.js";
import { printable, printableJson } from "./printable.js";
import { RunCancel } from "./run-cancel.js";
import { startRun } from "./start-run.js";
import { answerCapFromEnv, targetFromEnv } from "./target.js";
import { terminalAsk } from "./terminal-ask.js";
import { TerminalKeys, type TtyInput } from "./terminal-keys.js";
import { Outputs } from "./terminal-out.js";
import { Transcript } from "./transcript.js";
import { decodeEvent, SessionBody } from "./wire.js";

/**
 * `agent-server run`: makes a session (or uses `--session`), starts a run and follows its
 * events to `run.finished`, answering approvals on the way; resolves with the exit code.
 */
export async function runCommand(options: RunOptions, io: CliIo): Promise<ExitCode> {
  const maxAnswerBytes = answerCapFromEnv(io.env);
  const client = new ApiClient(targetFromEnv(io.env), { maxAnswerBytes });
  const out = new Outputs(io.stdout, io.stderr, !options.json);
  const input =
    options.prompt === "-" ? (await readPrompt({ stream: io.stdin })).replace(/\r?\n$/, "") : options.prompt;
  if (input.trim() === "") throw new CliError("the prompt read from stdin is empty", EXIT.usage);
  const cancel = new RunCancel({ client, out });
  const unsubscribe = io.onInterrupt(() => cancel.interrupt());
  const keys = questionKeys(options, io, cancel, out);
  keys?.start();
  try {
    return await Promise.race([
      cancel.left.then(() => EXIT.aborted),
      startAndFollow({
        client,
        out,
        cancel,
        options,
        input,
        io,
        ask: keys && terminalAsk({ keys, output: io.stderr }),
      }),
    ]);
  } finally {
    // The terminal is given back however the client stops, with what it held.
    keys?.stop();
    out.start();
    unsubscribe();
    // The answer's last line is ended, however the client stops.
    out.endLine();
  }
}

async function startAndFollow({
  client,
  out,
  cancel,
  options,
  input,
  io,
  ask,
}: {
  client: ApiClient;
  out: Outputs;
  cancel: RunCancel;
  options: RunOptions;
  input: string;
  io: CliIo;
  ask: Ask | null;
}): Promise<ExitCode> {
  await checkApprovedTools(client, options.approve);
  const sessionId = options.session ?? (await createSession(client, options));
  out.note(`session ${printable(sessionId)}`);
  if (cancel.requested) {
    out.note("[run] not started: cancelled");
    return EXIT.aborted;
  }
  cancel.starting(sessionId);
  const run = await startRun({
    client,
    out,
    sessionId,
    body: { input, ...(options.maxTurns === undefined ? {} : { maxTurns: options.maxTurns }) },
  });
  out.note(`run ${printable(run.id)}`);
  const approvals = new Approvals({ client, runId: run.id, approve: options.approve, ask, out });
  cancel.attach(run.id, approvals);
  const transcript = new Transcript(out, { maxTurnChars: client.maxAnswerBytes });
  const events = followRunEvents({
    client,
    runId: run.id,
    onReconnect: ({ after, reason, refused }) =>
      out.note(
        refused && after === 0
          ? `[stream] not opened (${printable(reason)}); trying again`
          : `[stream] lost (${printable(reason)}); reconnecting after event ${after}`,
      ),
  });
  for await (const frame of events) {
    // While the output is stopped (Ctrl-S), the events wait at the server.
    await out.flowing();
    // Decoded first: data that is not JSON (which may carry any control character) is never written.
    const event = decodeEvent(frame.data);
    // On a terminal, control characters in the JSON are escaped (the same JSON), as in the text.
    if (options.json) io.stdout.write(`${io.stdout.isTTY ? printableJson(frame.data) : frame.data}\n`);
    if (event === null) continue;
    if (event.type === "approval.resolved") approvals.resolved(event.toolCallId);
    transcript.show(event);
    if (event.type === "approval.requested") approvals.requested(event);
    if (event.type === "run.finished") {
      approvals.stop();
      return exitCodeForStopReason(event.run.stopReason);
    }
  }
  throw new CliError(`the events of run ${run.id} ended without run.finished`, EXIT.server);
}

/**
 * The terminal's keys, read for the whole run when it may ask a person: one who reads
 * stderr and types on stdin, and a run that does not approve everything (`--approve all`).
 * Otherwise null, and stdin is left alone (Ctrl-C is then the terminal's SIGINT). A prompt
 * read from stdin (`run -`) read it to its end (Ctrl-D on a terminal): nothing more comes,
 * so there is no terminal to ask.
 */
function questionKeys(options: RunOptions, io: CliIo, cancel: RunCancel, out: Outputs): TerminalKeys | null {
  const { stdin, stderr } = io;
  if (options.approve.all || options.prompt === "-" || !stdin.isTTY || !stderr.isTTY || !isTtyInput(stdin)) return null;
  return new TerminalKeys({
    input: stdin,
    onInterrupt: () => cancel.interrupt(),
    stopOutput: () => out.stop(),
    startOutput: () => out.start(),
    onIgnored: () =>
      out.note(
        "[input] ignored what was typed while no question was open (a question counts only keys typed after it)",
      ),
  });
}

function isTtyInput(stdin: CliIo["stdin"]): stdin is TtyInput {
  return typeof stdin.setRawMode === "function";
}

async function createSession(client: ApiClient, options: RunOptions): Promise<string> {
  const body = {
    ...(options.system === undefined ? {} : { system: options.system }),
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
    metadata: { client: "agent-server run" },
  };
  const session = await client.json({ method: "POST", path: "/sessions", body, schema: SessionBody });
  return session.id;
}
