import { LruTable } from "../lru-table.js";
import type { SessionRecord } from "../store/store.js";

/** What a kept record costs besides its system prompt and metadata (its fields, ids, table entry), about in bytes. */
const RECORD_COST = 1024;

function sizeOf(record: SessionRecord): number {
  return RECORD_COST + (record.system?.length ?? 0) + (record.metadata ? JSON.stringify(record.metadata).length : 0);
}

/**
 * The records of the sessions started in lately, kept in memory so that a run's start does
 * not read its session again (with a system prompt of up to 200,000 characters), nor does a
 * start refused as busy. Sound because a session's record never changes once inserted; a
 * session deleted meanwhile, by this instance or another, is met by the run's insert
 * (`session_gone`, 404). Bounded by `maxChars` (about bytes): the sessions used least
 * recently are dropped first; a record larger than the bound is not kept.
 */
export class SessionRecords {
  readonly #records: LruTable<SessionRecord>;

  constructor(maxChars = 16 * 1024 * 1024) {
    this.#records = new LruTable(maxChars);
  }

  /** The kept record of session `id`, if any (it becomes the most recently used). */
  get(id: string): SessionRecord | undefined {
    return this.#records.get(id);
  }

  put(record: SessionRecord): void {
    this.#records.set(record.id, record, sizeOf(record));
  }

  /** Drops the record of a session being deleted. */
  forget(id: string): void {
    this.#records.delete(id);
  }

  /** How many records are kept, and their size in the bound's unit. */
  get size(): { sessions: number; chars: number } {
    return { sessions: this.#records.size, chars: this.#records.cost };
  }
}
