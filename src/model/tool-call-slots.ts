/** A tool call being assembled from its fragments. */
export interface PartialCall {
  id: string;
  name: string;
  input: string;
  /** Provider fields beside `id`, `type` and `function` (Gemini's `extra_content`), merged across fragments. */
  extras: Record<string, unknown> | null;
}

/** The fields of a fragment that identify its call. */
export interface FragmentKey {
  /** A non-negative integer, or undefined when the fragment has none. */
  index: number | undefined;
  id: string;
  name: string;
}

/**
 * Which call each tool-call fragment belongs to. OpenAI keys fragments by `index` and sends
 * the id once; providers bend this in several ways, all handled here: several calls sharing
 * one index, told apart by their ids (some Ollama and Grok versions, whose fragments may
 * interleave) or, without ids, by a second function name; and fragments without any index,
 * often with an empty id, each a whole call (Gemini's compatible endpoint). So:
 * - a fragment continues the call its index (without an index: the last call) is at, unless
 *   that call has another id and the fragment's id is one an earlier call has: it then
 *   continues the latest call of that id, whatever fragments came between (a new index is
 *   always a new call, whatever its id);
 * - it starts a new call instead when its non-empty id differs from that call's, or when it
 *   names a function while that call already has a name: with an index, a different name
 *   (unless its id is the call's own); without one, any name unless it repeats the call's id
 *   and name (a provider that sends them with every fragment);
 * - except that a fragment with an index, no name and an id no call has continues the call at
 *   its index when that call is named: a call needs a name to start, and some providers give
 *   a call's later fragments another id than its first (Poolside; older mlx-openai-server, a
 *   new one per fragment). The call keeps its first id, and the other id names no call.
 * Calls keep the order they began in.
 */
export class ToolCallSlots {
  readonly calls: PartialCall[] = [];
  /** The call each index currently continues. */
  readonly #byIndex = new Map<number, PartialCall>();
  /** The latest call of each non-empty id. */
  readonly #byId = new Map<string, PartialCall>();
  #last: PartialCall | null = null;

  /** The call this fragment continues or starts. */
  callFor({ index, id, name }: FragmentKey): PartialCall {
    let current = (index === undefined ? this.#last : this.#byIndex.get(index)) ?? null;
    if (current !== null && id !== "" && current.id !== "" && current.id !== id) {
      current = this.#byId.get(id) ?? current;
    }
    const differentId = current !== null && id !== "" && current.id !== "" && id !== current.id;
    // A nameless fragment at a named call's index, with an id no call has: that call under another id.
    const sameCallOtherId =
      differentId && index !== undefined && name === "" && current?.name !== "" && !this.#byId.has(id);
    const otherId = differentId && !sameCallOtherId;
    const sameId = current !== null && id !== "" && id === current.id;
    const anotherCall =
      current !== null &&
      name !== "" &&
      current.name !== "" &&
      (index === undefined ? !(sameId && name === current.name) : name !== current.name && !sameId);
    let call = current;
    if (!call || otherId || anotherCall) {
      call = { id: "", name: "", input: "", extras: null };
      this.calls.push(call);
    }
    if (index !== undefined) this.#byIndex.set(index, call);
    if (id !== "" && !sameCallOtherId) this.#byId.set(id, call);
    this.#last = call;
    return call;
  }
}
