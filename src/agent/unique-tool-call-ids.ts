import type { ToolCall } from "./messages.js";

/**
 * The calls with every id unique within the run. Law 4 pairs each result with its call by
 * id, and an approval names its call by id, so an id must never name two calls. Some
 * OpenAI-compatible models number their calls afresh each turn (`call_0` again) or repeat
 * one within a reply: such a call keeps its place and content under a new id (`call_0-2`,
 * the first free suffix), which the model then sees in the history it is sent, paired
 * with the call's result. An empty id becomes `call-N` the same way.
 */
export function withUniqueIds(calls: readonly ToolCall[], used: ReadonlySet<string>): ToolCall[] {
  const taken = new Set(used);
  return calls.map((call) => {
    let id = call.id;
    if (id === "" || taken.has(id)) {
      const base = id === "" ? "call" : id;
      let n = 2;
      while (taken.has(`${base}-${n}`)) n++;
      id = `${base}-${n}`;
    }
    taken.add(id);
    return id === call.id ? call : { ...call, id };
  });
}
