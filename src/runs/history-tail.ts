import type { AgentMessage } from "../agent/messages.js";
import { type StoredMessage, toAgentMessage } from "../domain/stored-message.js";
import { LruTable } from "../lru-table.js";
import type { Store } from "../store/store.js";

/** A session's history as a run starts from it: as stored, and as the loop takes it. */
export interface SessionHistory {
  stored: readonly StoredMessage[];
  messages: readonly AgentMessage[];
}

interface Entry extends SessionHistory {
  lastSeq: number;
  chars: number;
}

/**
 * What a kept session costs besides its messages (its entry, arrays and table slot), and what a
 * message costs besides its text (the stored and the loop's objects, ids, timestamps):
 * measured on Node 24 at ~390 and ~620 bytes. Counted with the text, so that many small
 * sessions are bounded by the memory they take, not only by their characters.
 */
const SESSION_COST = 400;
const MESSAGE_COST = 640;

/**
 * What `text` keeps alive, in bytes: the string as V8 holds it (one byte a character, two once
 * it holds any character past ASCII: an upper estimate for Latin-1) and its request bytes, UTF-8
 * JSON, as the model client encodes them once and keeps them as long as the message lives
 * (src/model/wire-body.ts): 6 bytes for a control character written \u0001, 3 for a CJK one.
 * Worked out once per message, as it enters the tail (two native passes, no loop over characters).
 */
function keptBytes(text: string): number {
  const json = JSON.stringify(text);
  const encoded = Buffer.byteLength(json);
  // JSON.stringify writes only ASCII for ASCII text: UTF-8 longer than the JSON means more.
  return (encoded > json.length ? 2 : 1) * text.length + encoded;
}

/** What a message costs, roughly, in the unit of the bound (about a byte): its text and its calls' arguments (keptBytes). */
function charsOf(message: StoredMessage): number {
  let chars = keptBytes(message.content);
  if (message.role === "assistant") for (const call of message.toolCalls ?? []) chars += keptBytes(call.input) + 128;
  return MESSAGE_COST + chars;
}

/**
 * The histories of the sessions that ran here lately, kept in memory so that a run reads and
 * validates only the messages committed since the last one, not the whole history. Sound
 * because a session's messages are append-only with increasing seqs (its one active run
 * writes them, whichever instance executes it): reading after the last seq seen picks up
 * everything, also what another instance wrote meanwhile. The database stays the truth; this
 * holds only what was read from it. Bounded by `maxChars` (what messages keep alive, their
 * text and its request bytes (charsOf), and a fixed cost per session and per message: about
 * bytes of memory): the sessions used least recently are dropped first.
 */
export class HistoryTail {
  readonly #entries: LruTable<Entry>;
  /**
   * Per session with reads in flight: how many, and its generation, which forget() moves on. A
   * read begun under an older generation neither keeps its result nor builds on what it saw
   * kept: it reads again. Only sessions being read have one, so it stays as small as that.
   */
  readonly #reading = new Map<string, { reads: number; generation: number }>();

  constructor(
    private readonly store: Pick<Store, "messages">,
    maxChars = 64 * 1024 * 1024,
  ) {
    this.#entries = new LruTable(maxChars);
  }

  /**
   * The session's whole committed history, in order (the read of a run's start). A read that a
   * forget() of the session overtook reads again, so that what was forgotten never comes back.
   */
  async read(sessionId: string): Promise<SessionHistory> {
    const reading = this.#reading.get(sessionId) ?? { reads: 0, generation: 0 };
    this.#reading.set(sessionId, reading);
    reading.reads++;
    const generation = reading.generation;
    let newer: StoredMessage[];
    const known = this.#entries.peek(sessionId);
    try {
      newer = await this.store.messages.history(sessionId, known?.lastSeq ?? 0);
    } finally {
      if (--reading.reads === 0) this.#reading.delete(sessionId);
    }
    if (reading.generation !== generation) return this.read(sessionId);
    // Another read of the session may have moved the entry on meanwhile: the later one stands.
    const current = this.#entries.peek(sessionId);
    const base = current && current.lastSeq >= (known?.lastSeq ?? 0) ? current : known;
    const fresh = base ? newer.filter((m) => m.seq > base.lastSeq) : newer;
    const entry: Entry = {
      stored: base ? base.stored.concat(fresh) : fresh,
      messages: (base?.messages ?? []).concat(fresh.map(toAgentMessage)),
      lastSeq: fresh.at(-1)?.seq ?? base?.lastSeq ?? 0,
      chars: (base?.chars ?? SESSION_COST) + fresh.reduce((sum, m) => sum + charsOf(m), 0),
    };
    // A history larger than the whole bound is not kept (the next run reads it again).
    this.#entries.set(sessionId, entry, entry.chars);
    return entry;
  }

  /** Drops what is kept of a session (deleted), also what a read in flight of it saw kept. */
  forget(sessionId: string): void {
    this.#entries.delete(sessionId);
    const reading = this.#reading.get(sessionId);
    if (reading) reading.generation++;
  }

  /** How many characters are kept, over how many sessions. */
  get size(): { sessions: number; chars: number } {
    return { sessions: this.#entries.size, chars: this.#entries.cost };
  }
}
