import type { ToolCall } from "./messages.js";

/** The longest tool-call id kept as the model sent it (a path parameter stays well within limits). */
export const MAX_ID_LENGTH = 64;

const ID_CHARS = /^[A-Za-z0-9_.:-]+$/;

/**
 * Whether an id can be used as it is: short, URL-path safe, not a dot segment, not
 * `__proto__` (which names an object's prototype, not a key: metadata kept by call id lost it).
 */
const isUsableId = (id: string): boolean =>
  id.length <= MAX_ID_LENGTH && ID_CHARS.test(id) && id !== "." && id !== ".." && id !== "__proto__";

/**
 * The calls with every id unique in the conversation (`used`: the ids of the history and of
 * this run so far). Law 4 pairs each result with its call by id, an approval names its
 * call by id, and some upstreams refuse a repeated id anywhere in the messages. Some
 * OpenAI-compatible models number their calls afresh each turn (`call_0` again) or repeat
 * one within a reply: such a call keeps its place and content under a new id (`call_0-2`,
 * the first free suffix), which the model then sees in the history it is sent, paired
 * with the call's result. An id a client could not put in a URL path segment as it is (empty,
 * over MAX_ID_LENGTH characters, `.` or `..`, or with characters other than letters, digits,
 * `_`, `-`, `.` and `:`) becomes `call-N` the same way: every call can be approved with
 * `POST /runs/{id}/approvals/{toolCallId}`.
 */
export function withUniqueIds(calls: readonly ToolCall[], used: ReadonlySet<string>): ToolCall[] {
  // A call whose id is new keeps it (the first of repeats does); only the others are renamed.
  // Linear in the calls (a reply may hold thousands, all with one id): the first of each id is
  // found with a set, and each base's search for a free suffix goes on from where it stopped.
  const seen = new Set<string>();
  const keeps = calls.map((call) => {
    const first = !seen.has(call.id);
    seen.add(call.id);
    return first && isUsableId(call.id) && !used.has(call.id);
  });
  // Usually every call keeps its id: nothing to rename, and `used` (the whole history's) is not copied.
  if (keeps.every(Boolean)) return [...calls];
  const taken = new Set([...used, ...calls.filter((_, i) => keeps[i]).map((call) => call.id)]);
  const nextSuffix = new Map<string, number>();
  return calls.map((call, i) => {
    if (keeps[i]) return call;
    const base = isUsableId(call.id) ? call.id : "call";
    let n = nextSuffix.get(base) ?? 2;
    while (taken.has(`${base}-${n}`)) n++;
    nextSuffix.set(base, n + 1);
    const id = `${base}-${n}`;
    taken.add(id);
    return { ...call, id };
  });
}
