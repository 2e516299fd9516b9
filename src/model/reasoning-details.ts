/**
 * OpenRouter's `reasoning_details`: the model's reasoning as typed blocks (`reasoning.text`,
 * perhaps signed; `reasoning.summary`; `reasoning.encrypted`) that some models (Gemini 3,
 * Claude with thinking, OpenAI's reasoning models) need back on the assistant message in the
 * next request, above all after a tool call. A stream sends each block in fragments sharing
 * its `type` and `index`: their `text`, `summary` and `data` are concatenated in order, and
 * every other field a fragment carries (`signature`, `format`, `id`) is kept, a later value
 * replacing an earlier one. A fragment without a string `type` and a whole-number `index` is
 * a block of its own.
 */
export type ReasoningDetail = Record<string, unknown>;

/** The fields whose fragments make one string. */
const CONCATENATED = new Set(["text", "summary", "data"]);

/** The most blocks one reply may carry; past it the reply is cut off as too large. */
export const MAX_REASONING_DETAILS = 10_000;

export class ReasoningDetailsFold {
  readonly #blocks: ReasoningDetail[] = [];
  readonly #byKey = new Map<string, ReasoningDetail>();

  /** The blocks folded so far, in the order each began. */
  get blocks(): readonly ReasoningDetail[] {
    return this.#blocks;
  }

  /**
   * What folding `fragment` in adds to the blocks, in characters: a new block's JSON; else the
   * text it joins, and the JSON of each other field it changes (its `type` and `index` only
   * name the block). `text`: its `text` and `summary`, which the delta's `reasoning` may repeat.
   */
  measure(fragment: ReasoningDetail): { chars: number; text: number } {
    let text = 0;
    for (const field of ["text", "summary"]) {
      const value = fragment[field];
      if (typeof value === "string") text += value.length;
    }
    const key = keyOf(fragment);
    const block = key === null ? undefined : this.#byKey.get(key);
    if (!block) return { chars: JSON.stringify(fragment).length, text };
    let chars = 0;
    for (const [field, value] of Object.entries(fragment)) {
      if (value === null || value === undefined || field === "type" || field === "index") continue;
      if (CONCATENATED.has(field) && typeof value === "string") chars += value.length;
      else if (block[field] !== value) chars += JSON.stringify(value).length;
    }
    return { chars, text };
  }

  /** Folds one fragment in; false when it would begin a block past MAX_REASONING_DETAILS. */
  add(fragment: ReasoningDetail): boolean {
    const key = keyOf(fragment);
    const block = key === null ? undefined : this.#byKey.get(key);
    if (block) {
      for (const [field, value] of Object.entries(fragment)) {
        const before = block[field];
        const joined = CONCATENATED.has(field) && typeof before === "string" && typeof value === "string";
        if (value !== null && value !== undefined) setOwn(block, field, joined ? before + value : value);
      }
      return true;
    }
    if (this.#blocks.length >= MAX_REASONING_DETAILS) return false;
    // A copy of its own properties: a key such as `__proto__` stays a plain field.
    const copy: ReasoningDetail = {};
    for (const [field, value] of Object.entries(fragment)) setOwn(copy, field, value);
    this.#blocks.push(copy);
    if (key !== null) this.#byKey.set(key, copy);
    return true;
  }
}

function keyOf(fragment: ReasoningDetail): string | null {
  const { type, index } = fragment;
  if (typeof type !== "string" || !Number.isSafeInteger(index)) return null;
  return `${index} ${type}`;
}

function setOwn(target: ReasoningDetail, field: string, value: unknown): void {
  Object.defineProperty(target, field, { value, enumerable: true, writable: true, configurable: true });
}
