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
 * the id once; providers bend this in two ways, both handled here: several calls sharing one
 * index, each with its own id (some Ollama and Grok versions), and fragments without any index,
 * often with an empty id, each a whole call (Gemini's compatible endpoint). So: a fragment
 * whose non-empty id differs from the id of the call it would continue starts a new call; a
 * fragment without an index continues the last call, unless it names a function while that
 * call already has a name (and is not the same id). Calls keep the order they began in.
 */
export class ToolCallSlots {
  readonly calls: PartialCall[] = [];
  /** The call each index currently continues. */
  readonly #byIndex = new Map<number, PartialCall>();
  #last: PartialCall | null = null;

  /** The call this fragment continues or starts. */
  callFor({ index, id, name }: FragmentKey): PartialCall {
    const current = (index === undefined ? this.#last : this.#byIndex.get(index)) ?? null;
    const otherId = current !== null && id !== "" && current.id !== "" && id !== current.id;
    // Without an index, a fragment naming a function starts another call, unless it repeats
    // the current call's id and name (a provider that sends them with every fragment).
    const anotherCall =
      index === undefined &&
      current !== null &&
      name !== "" &&
      current.name !== "" &&
      !(id !== "" && id === current.id && name === current.name);
    let call = current;
    if (!call || otherId || anotherCall) {
      call = { id: "", name: "", input: "", extras: null };
      this.calls.push(call);
    }
    if (index !== undefined) this.#byIndex.set(index, call);
    this.#last = call;
    return call;
  }
}
