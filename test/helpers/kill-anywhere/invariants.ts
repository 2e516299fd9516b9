import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { MessageRow } from "../../../src/store/messages.js";
import { expectedAssistant, MARKS, STEER_INPUT, sessionTag } from "./script.js";
import type { Acknowledged } from "./workload.js";

/** Rows of one SELECT, over either backend (the schemas name and type their columns alike). */
// biome-ignore lint/suspicious/noExplicitAny: rows are cast where read.
export type Query = (sql: string) => Promise<any[]>;

/** Outcomes that say a call was never executed: its side effect must not exist. */
const NEVER_RAN = new Set(["ABORTED", "DENIED", "NOT_EXECUTED", "UNKNOWN_TOOL", "INVALID_ARGUMENTS"]);

/**
 * Every durability law the product promises, checked in the database itself once the server
 * has settled (the SQLite file opened read-only, or the PostgreSQL database) and in the
 * workspaces, against what the clients were answered (`acked`): each broken law a sentence in
 * `problems`, empty when all hold. The laws: acknowledged runs exist, all finished (none left
 * live without an owner), no steered input left untaken; each run's events are seqs 1..n with
 * one run.finished, last; every event a client saw is stored as it saw it; every stored message
 * has exactly one `message` event and every such event its message; every tool call of an
 * assistant message has exactly one result, after it, in its run, and its ledger row finished
 * with that result; a stored assistant message is the script's whole reply (nothing partial);
 * a side effect (a marker line, a note file) happens at most once per call, and a call that
 * ran is never reported as not executed (its real result, its tool's own failure such as
 * SHELL_ABORTED by a cancel, or INTERRUPTED, "outcome unknown"); a decision answered 200 is
 * kept; a start retried with its key is one run, and each run begins with its input, once.
 */
export async function checkDatabase(
  dir: string,
  acked: Acknowledged,
  query: Query,
): Promise<{ problems: string[]; summary: string }> {
  const problems: string[] = [];
  const runs = (await query("SELECT id, session_id, status, stop_reason, input FROM runs ORDER BY created_at, id")) as {
    id: string;
    session_id: string;
    status: string;
    stop_reason: string | null;
    input: string;
  }[];
  const runIds = new Set(runs.map((r) => r.id));
  for (const id of acked.runs) if (!runIds.has(id)) problems.push(`acknowledged run ${id} is missing`);
  // No run stays live without progress: the settle waited for all to finish.
  for (const r of runs) {
    if (r.status !== "finished" || !r.stop_reason) problems.push(`run ${r.id} is ${r.status}/${r.stop_reason}`);
  }
  // A `?wait=true` start answers with the finished run, however many kills it was sent across.
  for (const w of acked.waited) {
    if (w.status !== 200 || w.run.status !== "finished")
      problems.push(`a ?wait=true start was answered ${w.status} ${JSON.stringify(w.run).slice(0, 200)}`);
  }
  for (const id of new Set(acked.reasked))
    problems.push(`call ${id} awaits approval again after a decision was answered`);
  const decided = new Map([...acked.decisions].map(([id, decision]) => [id, decision]));
  for (const m of (await query("SELECT tool_call_id, metadata FROM messages WHERE role = 'tool'")) as MessageRow[]) {
    const decision = decided.get(m.tool_call_id as string);
    const code = JSON.parse(m.metadata ?? "{}").errorCode;
    // Denied: never run (DENIED, or ABORTED by a cancel first); approved: never DENIED.
    if (decision === "deny" ? !NEVER_RAN.has(code) : decision === "approve" && code === "DENIED")
      problems.push(`call ${m.tool_call_id} was answered ${decision}, its result is ${code ?? "ok"}`);
  }
  const leftInputs = (await query("SELECT run_id, content FROM run_inputs")) as { run_id: string }[];
  for (const i of leftInputs) problems.push(`steered input left unconsumed on run ${i.run_id}`);

  // Event seqs of each run are 1..n; run.finished is there once, last, for a finished run.
  const events = (await query("SELECT run_id, seq, type, data FROM run_events ORDER BY run_id, seq")) as {
    run_id: string;
    seq: number;
    type: string;
    data: string;
  }[];
  const byRun = new Map<string, typeof events>();
  for (const e of events) byRun.set(e.run_id, [...(byRun.get(e.run_id) ?? []), e]);
  // What a client saw is what is stored: no event is lost or rewritten after it was sent.
  for (const [runId, seen] of acked.seen) {
    const stored = byRun.get(runId) ?? [];
    for (const e of seen) {
      const at = stored[Number(e.id) - 1];
      if (at?.type !== e.event || at.data !== e.data)
        problems.push(`run ${runId}: event ${e.id} (${e.event}) a client saw is stored as ${at?.type ?? "nothing"}`);
    }
  }
  const messageEvents = new Map<string, number>();
  for (const r of runs) {
    const list = byRun.get(r.id) ?? [];
    list.forEach((e, i) => {
      if (e.seq !== i + 1) problems.push(`run ${r.id}: event #${i + 1} has seq ${e.seq} (a gap)`);
      if (e.type === "message") {
        const id = JSON.parse(e.data).message?.id as string;
        messageEvents.set(id, (messageEvents.get(id) ?? 0) + 1);
      }
    });
    const finished = list.filter((e) => e.type === "run.finished");
    if (finished.length !== 1) problems.push(`run ${r.id} has ${finished.length} run.finished events`);
    else if (list.at(-1)?.type !== "run.finished") problems.push(`run ${r.id}: events follow its run.finished`);
  }

  const messages = (await query("SELECT * FROM messages ORDER BY session_id, seq")) as MessageRow[];
  for (const m of messages) {
    const n = messageEvents.get(m.id) ?? 0;
    if (n !== 1) problems.push(`message ${m.id} (${m.role}, run ${m.run_id}) has ${n} message events`);
    messageEvents.delete(m.id);
  }
  for (const id of messageEvents.keys()) problems.push(`a message event names message ${id}, which is not stored`);

  for (const sessionId of acked.steered) {
    if (!messages.some((m) => m.session_id === sessionId && m.role === "user" && m.content.endsWith(STEER_INPUT)))
      problems.push(`session ${sessionId}: the accepted steered input is not in its history`);
  }
  const sessions = (await query("SELECT id, workspace FROM sessions")) as { id: string; workspace: string }[];
  for (const s of sessions) {
    problems.push(
      ...checkSession(
        dir,
        s,
        messages.filter((m) => m.session_id === s.id),
        runs.filter((r) => r.session_id === s.id),
      ),
    );
  }

  // The ledger agrees: every call finished, with its result message.
  const ledger = (await query("SELECT run_id, id, state, result_message_id FROM tool_calls")) as {
    run_id: string;
    id: string;
    state: string;
    result_message_id: string | null;
  }[];
  const results = new Map(messages.filter((m) => m.role === "tool").map((m) => [`${m.run_id}/${m.tool_call_id}`, m]));
  for (const c of ledger) {
    if (c.state !== "finished") problems.push(`ledger: call ${c.id} is ${c.state}`);
    const result = results.get(`${c.run_id}/${c.id}`);
    if (!result) problems.push(`ledger: call ${c.id} has no result message`);
    else if (c.result_message_id !== result.id)
      problems.push(`ledger: call ${c.id} names result ${c.result_message_id}, stored ${result.id}`);
  }
  const inLedger = new Set(ledger.map((c) => `${c.run_id}/${c.id}`));
  for (const m of messages.filter((x) => x.role === "assistant" && x.tool_calls)) {
    for (const c of JSON.parse(m.tool_calls as string) as { id: string }[])
      if (!inLedger.has(`${m.run_id}/${c.id}`)) problems.push(`ledger: call ${c.id} of run ${m.run_id} is not in it`);
  }
  // A run's input is its first message, stored once however often the run was started over;
  // a start sent again with its idempotency key is one run.
  for (const r of runs) {
    const own = messages.filter((m) => m.run_id === r.id);
    if (own.length && (own[0]?.role !== "user" || own[0]?.content !== r.input))
      problems.push(`run ${r.id} does not begin with its input`);
    if (own.filter((m) => m.role === "user" && m.content === r.input).length > 1)
      problems.push(`run ${r.id} has its input more than once`);
    if (runs.some((o) => o !== r && o.session_id === r.session_id && o.input === r.input))
      problems.push(`session ${r.session_id} has two runs of input ${JSON.stringify(r.input)}`);
  }
  // What the iteration went through, for its story.
  const tally = (keys: string[]) => {
    const counts = new Map<string, number>();
    for (const key of keys.sort()) counts.set(key, (counts.get(key) ?? 0) + 1);
    return [...counts].map(([key, n]) => `${key}:${n}`).join(",");
  };
  const codes = messages
    .filter((m) => m.role === "tool")
    .map((m) => (JSON.parse(m.metadata ?? "{}").errorCode as string | null) ?? "ok");
  // The longest a run went without an event (kills and restarts count), and between which.
  let slowest = { ms: 0, what: "" };
  for (const list of byRun.values()) {
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1], list[i]].map((e) => JSON.parse((e as { data: string }).data));
      const ms = Date.parse(b.at) - Date.parse(a.at);
      if (ms > slowest.ms) slowest = { ms, what: `${a.type} -> ${b.type}` };
    }
  }
  const slow = `longest pause ${slowest.ms} ms (${slowest.what})`;
  return { problems, summary: `${tally(runs.map((r) => r.stop_reason ?? r.status))} ${tally(codes)}; ${slow}` };
}

/** One session's laws: results per call, what the model sent, side effects at most once. */
function checkSession(
  dir: string,
  session: { id: string; workspace: string },
  messages: MessageRow[],
  runs: { id: string; input: string }[],
): string[] {
  const problems: string[] = [];
  const where = `session ${session.id}`;
  const tagged = runs.map((r) => sessionTag(r.input)).find(Boolean);
  const workspace = join(dir, "workspaces", session.workspace);
  const marksPath = join(workspace, MARKS);
  const marks = existsSync(marksPath) ? readFileSync(marksPath, "utf8").split("\n").filter(Boolean) : [];
  const executions = new Map<string, number>();
  for (const line of marks) executions.set(line, (executions.get(line) ?? 0) + 1);

  const resultsOf = new Map<string, MessageRow[]>();
  for (const m of messages.filter((x) => x.role === "tool")) {
    resultsOf.set(m.tool_call_id as string, [...(resultsOf.get(m.tool_call_id as string) ?? []), m]);
  }
  const calls = new Set<string>();
  let k = 0;
  for (const m of messages) {
    if (m.role !== "assistant") continue;
    const toolCalls = (m.tool_calls ? JSON.parse(m.tool_calls) : []) as { id: string; name: string; input: string }[];
    // Only what the model sent whole is stored: the kth reply is the script's kth.
    if (tagged) {
      const expected = expectedAssistant(tagged.kind, tagged.tag, k);
      const stored = { content: m.content, toolCalls: toolCalls.map(({ id, name, input }) => ({ id, name, input })) };
      if (JSON.stringify(stored) !== JSON.stringify(expected)) {
        problems.push(
          `${where}: assistant #${k} ${JSON.stringify(stored)} is not the script's ${JSON.stringify(expected)}`,
        );
      }
    }
    k++;
    for (const c of toolCalls) {
      calls.add(c.id);
      const results = resultsOf.get(c.id) ?? [];
      if (results.length !== 1) {
        problems.push(`${where}: call ${c.id} (${c.name}) has ${results.length} results`);
        continue;
      }
      const result = results[0] as MessageRow;
      if (result.run_id !== m.run_id || result.seq < m.seq) problems.push(`${where}: result of ${c.id} is misplaced`);
      const code = result.is_error ? (JSON.parse(result.metadata ?? "{}").errorCode as string | null) : null;
      const ran =
        c.name === "shell"
          ? (executions.get(c.id) ?? 0)
          : c.name === "write_file" && existsSync(join(workspace, "notes", `${c.id}.txt`))
            ? 1
            : 0;
      // A started tool never runs twice; a call that ran has its real result (its tool's own
      // outcome: a cancel kills a shell, SHELL_ABORTED) or "outcome unknown" (INTERRUPTED),
      // never a result that says it was not executed.
      if (ran > 1) problems.push(`${where}: call ${c.id} executed ${ran} times`);
      if (ran > 0 && code && NEVER_RAN.has(code)) problems.push(`${where}: call ${c.id} ran but its result is ${code}`);
      if (ran === 0 && code && NEVER_RAN.has(code)) continue;
      if (ran === 0 && !result.is_error && (c.name === "shell" || c.name === "write_file"))
        problems.push(`${where}: call ${c.id} has a success result but never ran`);
    }
  }
  for (const id of resultsOf.keys()) if (!calls.has(id)) problems.push(`${where}: result for unknown call ${id}`);
  for (const id of executions.keys())
    if (!calls.has(id)) problems.push(`${where}: ${id} ran but no stored call names it`);
  return problems;
}
