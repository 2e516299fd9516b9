import type { RunEvent } from "../domain/run-events.js";
import type { Db } from "./database.js";
import { countWithin } from "./page.js";

/** A stored event: its seq, its type and its JSON exactly as it was sent. */
export interface StoredEvent {
  seq: number;
  type: string;
  data: string;
}

/** A run's last `plan.updated` event: its stored size, and its JSON when it was read. */
export interface LastPlanEvent {
  bytes: number;
  data: string | null;
}

/**
 * The read of a run's last `plan.updated` event (see the store's `events.lastPlan`), the same on
 * SQLite and PostgreSQL but for how the parameters are written: the type is a literal, so that
 * the partial index run_events_plans (migration 0021) answers it, its last entry for the run.
 * `octet_length` reads a value's length, not its content; the JSON is read only when it fits.
 */
export const lastPlanSql = (run: string, within: string): string =>
  `SELECT octet_length(data) AS bytes, CASE WHEN octet_length(data) <= ${within} THEN data END AS data
   FROM run_events WHERE run_id = ${run} AND type = 'plan.updated' ORDER BY seq DESC LIMIT 1`;

/**
 * The stored JSON of a user message's event begins `{"type":"message","message":{"id":"<id>","role":"user",`
 * (the order its fields are built in): a user message's event is told from its first few hundred
 * characters, the rest not read. Its id ends at the first `","` (a `"` inside a JSON string is
 * escaped), so no content can pass for the role; an event that begins otherwise (fields in
 * another order, an id longer than the prefix) is not told apart, and is read. The SQL test,
 * with the dialect's function that finds a substring's position (SQLite's `instr`, PostgreSQL's
 * `strpos`); substr reads only the prefix.
 */
export function isUserMessageSql(position: "instr" | "strpos"): string {
  const head = `'{"type":"message","message":{"id":"'`;
  const rest = "substr(data, 36, 600)";
  return `(type = 'message' AND substr(data, 1, 35) = ${head}
    AND ${position}(${rest}, '","') > 0 AND ${position}(${rest}, '","') = ${position}(${rest}, '","role":"user","'))`;
}

/** SQLite's test that a row of run_events is a user message's event. */
const IS_USER_MESSAGE = isUserMessageSql("instr");

export function eventStore(db: Db) {
  const insert = db.prepare("INSERT INTO run_events (run_id, seq, type, data) VALUES (?, ?, ?, ?)");
  const after = db.prepare(
    "SELECT seq, type, data FROM run_events WHERE run_id = +? AND seq > +? ORDER BY seq LIMIT +?",
  );
  // `octet_length` reads a value's length, not its content.
  const sizes = db
    .prepare("SELECT octet_length(data) FROM run_events WHERE run_id = +? AND seq > +? ORDER BY seq LIMIT +?")
    .pluck();
  const shown = `FROM run_events WHERE run_id = +? AND seq > +? AND NOT ${IS_USER_MESSAGE} ORDER BY seq LIMIT +?`;
  const afterShown = db.prepare(`SELECT seq, type, data ${shown}`);
  const sizesShown = db.prepare(`SELECT octet_length(data) ${shown}`).pluck();
  const last = db.prepare("SELECT max(seq) AS seq FROM run_events WHERE run_id = +?");
  const ofType = db.prepare("SELECT seq, type, data FROM run_events WHERE run_id = +? AND type = +? ORDER BY seq");
  const lastPlan = db.prepare(lastPlanSql("+@run", "+@within"));
  const headsOfType = db.prepare(
    "SELECT seq, substr(data, 1, +?) AS head FROM run_events WHERE run_id = +? AND type = +? ORDER BY seq",
  );

  return {
    /** Inserts events; call inside a transaction. Returns their serialized form. */
    insert(events: readonly RunEvent[]): StoredEvent[] {
      return events.map((event) => {
        const data = JSON.stringify(event);
        insert.run(event.runId, event.seq, event.type, data);
        return { seq: event.seq, type: event.type, data };
      });
    },
    /** Events after `seq`, in order, at most `limit` of them. */
    after(runId: string, seq: number, limit = Number.MAX_SAFE_INTEGER): StoredEvent[] {
      return after.all(runId, seq, limit) as StoredEvent[];
    },
    /** Events after `seq` within `limit` and `bytes` (at least one), and whether more follow. */
    afterWithin(runId: string, seq: number, page: { limit: number; bytes: number; withoutUserMessages?: boolean }) {
      const [sizesOf, rowsOf] = page.withoutUserMessages ? [sizesShown, afterShown] : [sizes, after];
      const found = sizesOf.all(runId, seq, page.limit + 1) as number[];
      const count = Math.min(page.limit, countWithin(found, page.bytes));
      const events = count === 0 ? [] : (rowsOf.all(runId, seq, count) as StoredEvent[]);
      return { events, more: found.length > count };
    },
    lastSeq(runId: string): number {
      return (last.get(runId) as { seq: number | null }).seq ?? 0;
    },
    ofType(runId: string, type: string): StoredEvent[] {
      return ofType.all(runId, type) as StoredEvent[];
    },
    headsOfType(runId: string, type: string, chars: number): { seq: number; head: string }[] {
      return headsOfType.all(chars, runId, type) as { seq: number; head: string }[];
    },
    lastPlan(runId: string, within: number): LastPlanEvent | null {
      return (lastPlan.get({ run: runId, within }) as LastPlanEvent | undefined) ?? null;
    },
  };
}

export type EventStore = ReturnType<typeof eventStore>;
