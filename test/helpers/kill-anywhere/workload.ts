import { openSse, type SseEvent } from "../sse-client.js";
import { inputTag, prng, type SessionKind, STEER_INPUT } from "./script.js";

/** The server the workload talks to now: replaced at each restart. */
export interface Target {
  url: string;
}

/** One HTTP call; any failure (the server killed under it) is `null`, never a throw. */
async function call(
  target: Target,
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
  headers: Record<string, string> = {},
) {
  try {
    const res = await fetch(target.url + path, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    const text = await res.text();
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected freely.
    return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the clients were told before the kill (what the server acknowledged). */
export interface Acknowledged {
  /** Runs whose start was answered (201/202/200): they must exist after the restart. */
  runs: string[];
  /** Decisions answered 200, by tool call id. */
  decisions: Map<string, "approve" | "deny">;
  /** Calls pending again after a decision on them was answered 200. */
  reasked: string[];
  /** Sessions whose steered input (its text ends with STEER_INPUT) was accepted into the active run (202). */
  steered: string[];
  /** What each `?wait=true` start was answered, once answered (sent again across kills). */
  waited: { status: number; run: { id?: string; status?: string } }[];
  /** Per run, the events a client following it saw before the kill. */
  seen: Map<string, SseEvent[]>;
}

/**
 * Starts the workload's sessions and runs on `target` (each session: its policy, its runs,
 * started with or without `?wait`, steered, queued or cancelled at random moments) and returns
 * at once; everything goes on in the background until `stop` aborts it. Requests in flight at
 * a kill fail quietly: what the server acknowledged is recorded in `acked`.
 */
export function startWorkload(
  target: Target,
  seed: number,
  tag: string,
  stop: AbortSignal,
): { acked: Acknowledged; jobs: Promise<void>[] } {
  const acked: Acknowledged = { runs: [], decisions: new Map(), reasked: [], steered: [], waited: [], seen: new Map() };
  /** A request a client sends again until it is answered (the server killed under it). */
  const persist = async (...args: Parameters<typeof call>) => {
    for (;;) {
      const res = await call(...args);
      if (res || stop.aborted) return res;
      await sleep(30);
    }
  };
  // A session a kill lost before its answer is lost to the client too: it makes another.
  const session = async (approval: unknown) => {
    const created = await persist(target, "POST", "/sessions", approval ? { approval } : {}, stop);
    return created?.status === 201 ? (created.body.id as string) : null;
  };
  let keys = 0;
  // A start is sent again with its idempotency key until answered: one run, however many kills.
  const run = async (sessionId: string, body: Record<string, unknown>, wait = false) => {
    const key = { "idempotency-key": `${tag}-${keys++}` };
    const path = `/sessions/${sessionId}/runs${wait ? "?wait=true" : ""}`;
    const res = await persist(target, "POST", path, body, stop, key);
    if (res && res.status < 300 && typeof res.body?.id === "string") {
      acked.runs.push(res.body.id);
      if (res.status === 202) acked.steered.push(sessionId);
      // A client follows the run (until the kill cuts it): what it saw must stay true.
      if (!acked.seen.has(res.body.id)) {
        const stream = await openSse(`${target.url}/runs/${res.body.id}/events`).catch(() => null);
        if (stream) {
          acked.seen.set(res.body.id, stream.events);
          stop.addEventListener("abort", () => stream.close());
        }
      }
    }
    return res;
  };
  const allow = { tools: { shell: "allow", write_file: "allow" } };
  const jobs: Record<SessionKind, () => Promise<void>> = {
    tools: async () => {
      const id = await session(allow);
      if (!id) return;
      await run(id, { input: `${inputTag("tools", tag)} look around` });
      const random = prng(seed ^ 0x1001);
      await sleep(random() * 150);
      // Joins the session's queue behind the first run (or starts, if that one is over).
      await run(id, { input: `${inputTag("tools", tag)} and then this`, ifBusy: "enqueue" });
    },
    approval: async () => {
      const id = await session(null);
      const res = id ? await run(id, { input: `${inputTag("approval", tag)} ask first` }, true) : null;
      if (res) acked.waited.push({ status: res.status, run: res.body?.run ?? {} });
    },
    steer: async () => {
      const id = await session(allow);
      if (!id) return;
      await run(id, { input: `${inputTag("steer", tag)} go` });
      const random = prng(seed ^ 0x2002);
      await sleep(random() * 200);
      await run(id, { input: `${inputTag("steer", tag)} ${STEER_INPUT}`, ifBusy: "steer" });
    },
    cancel: async () => {
      const id = await session(null);
      if (!id) return;
      const res = await run(id, { input: `${inputTag("cancel", tag)} maybe` });
      const random = prng(seed ^ 0x3003);
      await sleep(random() * 300);
      // Cancelled by DELETE, or by a new run started with ifBusy "interrupt".
      if (random() < 0.5) await run(id, { input: `${inputTag("cancel", tag)} instead, this`, ifBusy: "interrupt" });
      else if (res?.body?.id) await persist(target, "DELETE", `/runs/${res.body.id}`, undefined, stop);
    },
  };
  // Each job and the approver draw from a PRNG of their own: a seed replays every choice,
  // whatever order the jobs' requests are answered in.
  void approver(target, prng(seed ^ 0x4004), acked, stop);
  return { acked, jobs: Object.values(jobs).map((job) => job()) };
}

/**
 * Decides every pending approval of every run (approve, now and then deny) until `stop`:
 * what an operator does, before the kill and after each restart.
 */
export async function approver(target: Target, random: () => number, acked: Acknowledged, stop: AbortSignal) {
  while (!stop.aborted) {
    const sessions = await call(target, "GET", "/sessions?limit=100", undefined, stop);
    for (const s of sessions?.body?.items ?? []) {
      const runs = await call(target, "GET", `/sessions/${s.id}/runs?limit=100`, undefined, stop);
      for (const r of runs?.body?.items ?? []) {
        if (r.status !== "awaiting_approval") continue;
        const pending = await call(target, "GET", `/runs/${r.id}/approvals`, undefined, stop);
        for (const p of pending?.body?.items ?? []) {
          // A decision answered is stored: its call does not await one again.
          if (acked.decisions.has(p.toolCallId)) {
            acked.reasked.push(p.toolCallId);
            continue;
          }
          const decision = random() < 0.85 ? "approve" : "deny";
          const res = await call(target, "POST", `/runs/${r.id}/approvals/${p.toolCallId}`, { decision }, stop);
          if (res?.status === 200) acked.decisions.set(p.toolCallId, decision);
        }
      }
    }
    await sleep(15);
  }
}

/** Every run of every session, as the API lists them. */
export async function allRuns(target: Target) {
  const runs: { id: string; sessionId: string; status: string; stopReason: string | null }[] = [];
  const sessions = await call(target, "GET", "/sessions?limit=100");
  for (const s of sessions?.body?.items ?? []) {
    const page = await call(target, "GET", `/sessions/${s.id}/runs?limit=100`);
    runs.push(...(page?.body?.items ?? []));
  }
  return runs;
}

export { call };
