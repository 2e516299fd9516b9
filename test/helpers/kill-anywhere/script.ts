import type { FakeReply, FakeToolCall } from "../../fakes/openai-upstream.js";

/** A seeded PRNG (mulberry32): the same seed gives the same draws. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The kinds of session a workload drives, each with its own script. */
export type SessionKind = "tools" | "approval" | "steer" | "cancel";

/**
 * Every run's input names its session's script: `[ka:<kind>:<tag>]` (the model is asked with
 * the session's history, whose first run may have lost its input to a kill and an abort).
 */
export const inputTag = (kind: SessionKind, tag: string) => `[ka:${kind}:${tag}]`;
const TAG = /\[ka:(tools|approval|steer|cancel):([a-z0-9]+)\]/;

/** What the workload steers into a run of a `steer` session. */
export const STEER_INPUT = "steered: also this";

/** The marker file a `mark` call appends its own id to: one line per execution. */
export const MARKS = "marks.txt";
const mark = (id: string): FakeToolCall => ({
  id,
  name: "shell",
  arguments: JSON.stringify({ command: `echo ${id} >> ${MARKS}` }),
});
const note = (id: string): FakeToolCall => ({
  id,
  name: "write_file",
  arguments: JSON.stringify({ path: `notes/${id}.txt`, content: id }),
});

/** What the model sends as its `k`th reply (0-based) in a session of `kind`, `tag`. */
export interface ScriptedTurn {
  text: string[];
  calls: FakeToolCall[];
}

/**
 * The script: a pure function of the session and of how many assistant messages the request
 * carries, so a reply the server lost (never committed) is asked for, and sent, again
 * identically, and every stored assistant message can be compared with what was sent.
 */
export function scriptedTurn(kind: SessionKind, tag: string, k: number): ScriptedTurn {
  const id = (i: number) => `call_${kind}_${tag}_${k}_${i}`;
  if (kind === "tools" && k === 0) {
    return {
      text: ["Looking ", "around ", "first."],
      calls: [
        mark(id(0)),
        { id: id(1), name: "list_files", arguments: "{}" },
        note(id(2)),
        { id: id(3), name: "read_file", arguments: ['{"path":', `"notes/${id(2)}.txt"}`] },
      ],
    };
  }
  if (kind === "tools" && k === 1) return { text: [], calls: [mark(id(0)), note(id(1)), mark(id(2))] };
  // Asks approval (shell is not allowed in these sessions); list_files is read-only.
  if ((kind === "approval" || kind === "cancel") && k === 0) {
    return { text: [], calls: [mark(id(0)), { id: id(1), name: "list_files", arguments: "{}" }] };
  }
  if (kind === "approval" && k === 1) return { text: ["One ", "more."], calls: [mark(id(0))] };
  if (kind === "steer" && k === 0) return { text: ["Step ", "one."], calls: [mark(id(0))] };
  const words = `Reply ${k} of ${kind} ${tag}: all done here, nothing more to do.`.split(/(?<= )/);
  return { text: words, calls: [] };
}

/** The session of a model request (from its first tagged user message) and the turn asked for. */
export function requestTurn(
  // biome-ignore lint/suspicious/noExplicitAny: a request body as the fake upstream parsed it.
  body: any,
): { kind: SessionKind; tag: string; k: number } | null {
  // biome-ignore lint/suspicious/noExplicitAny: the wire messages.
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  for (const m of messages) {
    const match = m.role === "user" && typeof m.content === "string" ? TAG.exec(m.content) : null;
    if (match) {
      const k = messages.filter((x) => x.role === "assistant").length;
      return { kind: match[1] as SessionKind, tag: match[2] as string, k };
    }
  }
  return null;
}

/**
 * The fake upstream's fallback: every reply comes from the script, streamed, its finish chunk
 * held back a random few milliseconds (so a kill lands inside model streams too).
 */
export function scriptedModel(random: () => number) {
  // biome-ignore lint/suspicious/noExplicitAny: a request body as the fake upstream parsed it.
  return (body: any): FakeReply => {
    const turn = requestTurn(body);
    if (!turn) return { status: 400, errorBody: { error: { message: "untagged request", type: "invalid_request" } } };
    const { text, calls } = scriptedTurn(turn.kind, turn.tag, turn.k);
    const delay = Math.floor(random() * 40);
    return {
      ...(text.length ? { text } : {}),
      ...(calls.length ? { toolCalls: calls } : {}),
      gate: new Promise((resolve) => setTimeout(resolve, delay)),
    };
  };
}

/** The content and calls a stored assistant message must have, were it the `k`th of its session. */
export function expectedAssistant(kind: SessionKind, tag: string, k: number) {
  const { text, calls } = scriptedTurn(kind, tag, k);
  return {
    content: text.join(""),
    toolCalls: calls.map((c) => ({
      id: c.id,
      name: c.name,
      input: Array.isArray(c.arguments) ? c.arguments.join("") : c.arguments,
    })),
  };
}

/** The session's kind and tag, from the input of its first run. */
export function sessionTag(input: string): { kind: SessionKind; tag: string } | null {
  const match = TAG.exec(input);
  return match ? { kind: match[1] as SessionKind, tag: match[2] as string } : null;
}
