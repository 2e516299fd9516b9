import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_KEY } from "../../src/store/page.js";
import { createPgStore } from "../../src/store/pg/pg-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestPgDatabase, pipelinedPool, type TestPgDatabase } from "../helpers/pg-database.js";
import { seedLargeRun } from "../helpers/run-lists.js";
import { runRecord, seedSession } from "../helpers/seed.js";

interface Sent {
  text: string;
  values: unknown[];
}

// Each read the PostgreSQL store sends, planned with sequential scans priced out: a query an
// index can answer is then planned on it, one no index can answer (`IS NOT DISTINCT FROM`, an
// `OR` with the cursor) stays a Seq Scan. On a table of realistic size that is a scan of every
// session (27 ms at 200,000 sessions against 0.1 ms on the index).
describe("PostgreSQL reads that stay bounded", () => {
  let database: TestPgDatabase;
  let pool: pg.Pool;
  let store: Store;
  const sent: Sent[] = [];
  beforeAll(async () => {
    database = await createTestPgDatabase();
    pool = pipelinedPool(database.url, 4);
    pool.on("error", () => {});
    // Every statement, a read's or a write's batch, as each pooled connection sends it.
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((...args: unknown[]) => {
        const [text, values] = args;
        if (typeof text === "string") sent.push({ text, values: Array.isArray(values) ? values : [] });
        return query(...args);
      }) as typeof client.query;
    });
    store = createPgStore(pool);
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  /** The plan of the one statement sent by `read` that matches `pattern`, scans priced out. */
  async function planOf(pattern: RegExp, read: () => Promise<unknown>): Promise<string> {
    sent.length = 0;
    await read();
    const matching = sent.filter((s) => pattern.test(s.text));
    expect(matching, String(pattern)).toHaveLength(1);
    const { text, values } = matching[0] as Sent;
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const plan = await client.query(`EXPLAIN ${text}`, values);
      return plan.rows.map((r) => r["QUERY PLAN"]).join("\n");
    } finally {
      await client.end();
    }
  }

  it("a page of an owner's sessions, or of sessions of no owner, before and after a cursor, is read from sessions_owner", async () => {
    await seedSession(store, { id: "ses_a", owner: "key_1" });
    await seedSession(store, { id: "ses_b", owner: null });
    for (const owner of ["key_1", null]) {
      for (const cursor of [null, "ses_z"]) {
        // The page's sizes, then its rows (see rowsToRead): each a range of the index.
        for (const read of [/AS bytes FROM sessions WHERE/, /^SELECT \* FROM sessions WHERE/]) {
          const plan = await planOf(read, () => store.sessions.list({ owner, limit: 10, cursor }));
          expect(plan, `owner ${owner}, cursor ${cursor}`).toMatch(/Index Scan( Backward)? using sessions_owner/);
          expect(plan).not.toMatch(/Seq Scan/);
          if (cursor) expect(plan).toMatch(/Index Cond: .*id < /);
        }
      }
    }
  });

  it("a page of a session's runs after a cursor starts its index range at the cursor", async () => {
    await seedSession(store, { id: "ses_runs" });
    await store.runs.create(runRecord({ id: "run_1", sessionId: "ses_runs" }), []);
    for (const read of [/AS bytes FROM runs WHERE session_id/, /^SELECT \* FROM runs WHERE session_id/]) {
      const plan = await planOf(read, () => store.runs.list({ sessionId: "ses_runs", limit: 10, cursor: "run_9" }));
      expect(plan).toMatch(/Index Cond: \(\(session_id = .*\) AND \(id < /);
    }
  });

  it("a page of a session's messages, its sizes and its rows, is a range of the (session_id, seq) index", async () => {
    const message = {
      id: "msg_1",
      role: "user" as const,
      content: "hi",
      sessionId: "ses_runs",
      runId: "run_1",
      seq: 1,
    };
    await store.commitRun(
      "run_1",
      [{ kind: "message", message: { ...message, createdAt: new Date().toISOString() } }],
      [],
    );
    for (const read of [
      /AS bytes FROM messages WHERE/,
      /^SELECT \* FROM messages WHERE session_id = \$1 AND seq > \$2/,
    ]) {
      const plan = await planOf(read, () => store.messages.page({ sessionId: "ses_runs", afterSeq: 0, limit: 10 }));
      expect(plan).toMatch(/Index Cond: \(\(session_id = .*\) AND \(seq > /);
      expect(plan).not.toMatch(/Sort|Seq Scan/);
    }
    for (const read of [
      /AS bytes FROM messages WHERE/,
      /^SELECT \* FROM messages WHERE session_id = \$1 AND seq < \$2/,
    ]) {
      const plan = await planOf(read, () =>
        store.messages.page({ sessionId: "ses_runs", afterSeq: 0, beforeSeq: MAX_KEY + 1, limit: 10 }),
      );
      expect(plan).toMatch(/Index Cond: \(\(session_id = .*\) AND \(seq < /);
      expect(plan).not.toMatch(/Sort|Seq Scan/);
    }
  });

  // Their key sent as bigint (so that one past MAX_KEY reads nothing), still a range of the index.
  it("a run's events and a session's messages after a key are a range of their index, the key as bigint", async () => {
    const reads: [RegExp, () => Promise<unknown>][] = [
      [/^SELECT seq, type, data FROM run_events WHERE/, () => store.events.after("run_1", MAX_KEY + 1, 10)],
      [/AS bytes FROM run_events WHERE/, () => store.events.afterWithin("run_1", MAX_KEY + 1, { limit: 10, bytes: 1 })],
      [/^SELECT \* FROM messages WHERE session_id = \$1 AND seq >/, () => store.messages.history("ses_runs", 1)],
      [/^SELECT \* FROM messages WHERE .* run_id = \$2 AND seq >/, () => store.messages.ofRun("ses_runs", "run_1", 1)],
    ];
    for (const [pattern, read] of reads) {
      const plan = await planOf(pattern, read);
      expect(plan, String(pattern)).toMatch(/Index Cond: \(\(\w+ = .*\) AND \(seq > .*::bigint\)\)/);
      expect(plan, String(pattern)).not.toMatch(/Sort|Seq Scan/);
    }
  });

  it("a run's last plan event is the end of its range of run_events_plans, read backward, with no sort", async () => {
    for (const within of [0, 2 ** 31 - 1]) {
      const plan = await planOf(/FROM run_events WHERE .*'plan.updated'/, () => store.events.lastPlan("run_1", within));
      expect(plan).toMatch(/Index Scan Backward using run_events_plans/);
      expect(plan).not.toMatch(/Sort|Seq Scan|Filter/);
    }
  });

  it("a page of a run's steps, calls awaiting approval or webhook deliveries, its sizes and its rows, is a range of an index after its cursor", async () => {
    await seedSession(store, { id: "ses_lists" });
    await seedLargeRun(store, { sessionId: "ses_lists", runId: "run_lists", steps: 1, approvals: 1 });
    const query = { runId: "run_lists", after: null, limit: 10 };
    const lists = [
      { table: "run_steps", read: () => store.steps.page(query), range: /turn > / },
      {
        table: "tool_calls",
        read: () => store.toolCalls.awaitingApproval(query),
        range: /tool_calls_awaiting.*\n.*ordinal > /,
      },
      { table: "webhook_deliveries", read: () => store.webhooks.page(query), range: /event_seq > / },
    ];
    for (const { table, read, range } of lists) {
      for (const pattern of [
        new RegExp(`AS bytes FROM ${table} WHERE`),
        new RegExp(`^SELECT (?!.*AS bytes).* FROM ${table} WHERE run_id = \\$1`),
      ]) {
        const plan = await planOf(pattern, read);
        expect(plan, table).toMatch(/Index Cond: \(\(run_id = /);
        expect(plan, table).toMatch(range);
        expect(plan, table).not.toMatch(/Sort|Seq Scan/);
      }
    }
  });

  it("a session's delete looks for its unfinished runs in the partial indexes of active and of queued runs", async () => {
    await seedSession(store, { id: "ses_gone" });
    const plan = await planOf(/^DELETE FROM sessions/, () => store.sessions.delete("ses_gone"));
    expect(plan).toMatch(/using runs_one_active/);
    expect(plan).toMatch(/using runs_queue/);
    expect(plan).not.toMatch(/runs_session|Seq Scan on runs/);
  });

  it("a session's queued runs are looked for, and their ids read, in the partial index of queued runs", async () => {
    const exists = await planOf(
      /^SELECT EXISTS \(SELECT 1 FROM runs WHERE session_id = \$1 AND status = 'queued'\)/,
      () => store.runs.anyQueued("ses_runs"),
    );
    const ids = await planOf(/^SELECT id FROM runs WHERE session_id = \$1 AND status = 'queued'/, () =>
      store.runs.queuedIds("ses_runs"),
    );
    for (const plan of [exists, ids]) {
      expect(plan).toMatch(/using runs_queue/);
      expect(plan).not.toMatch(/Sort|Seq Scan/);
    }
  });

  it("an input left on a finished run is read by its id, its run by id", async () => {
    const plan = await planOf(/^SELECT i\.\* FROM run_inputs i WHERE id = \$1/, () => store.inputs.left("msg_absent"));
    expect(plan).toMatch(/using run_inputs_pkey on run_inputs/);
    expect(plan).toMatch(/using runs_pkey on runs/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it("a keyed steer's user message is found by its id", async () => {
    const plan = await planOf(/FROM messages WHERE session_id = \$1 AND id = \$2/, () =>
      store.messages.userMessageHolds("ses_runs", "inp_absent", "input"),
    );
    expect(plan).toMatch(/using messages_user_id/);
  });

  it("a start under an idempotency key finds a steer's input by its indexes", async () => {
    const plan = await planOf(/^SELECT EXISTS \(SELECT 1 FROM run_inputs i WHERE i\.id = \$2/, () =>
      store.inputs.steered("ses_runs", "msg_absent", { key: "\nleft msg_absent", id: "run_absent" }),
    );
    expect(plan).toMatch(/using run_inputs_pkey on run_inputs/);
    expect(plan).toMatch(/using messages_user_id on messages/);
    expect(plan).toMatch(/using runs_idempotency on runs/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it("a webhook claim finds the owners and each owner's oldest due deliveries on webhook_deliveries_owner_due", async () => {
    const now = Date.now();
    const plan = await planOf(/^WITH RECURSIVE owners/, () =>
      store.webhooks.claim({ now, leaseUntil: now + 1000, limit: 16, perOwner: 4, busy: new Map([["key_1", 1]]) }),
    );
    expect(plan).toMatch(/Index Only Scan using webhook_deliveries_owner_due/);
    expect(plan).toMatch(/Index Cond: \(\(owner = \w+\.owner\) AND \(next_attempt_at <= /);
    expect(plan).not.toMatch(/Seq Scan on webhook_deliveries/);
  });

  it("giving up deliveries past the cap counts each owner's pending on webhook_deliveries_owner_due", async () => {
    const at = new Date().toISOString();
    const plan = await planOf(/^WITH RECURSIVE owners[\s\S]*SET status = 'failed'/, () =>
      store.webhooks.giveUpPastCap({ cap: 10_000, reason: "over", at }),
    );
    expect(plan).toMatch(/Index Only Scan using webhook_deliveries_owner_due on webhook_deliveries d/);
    expect(plan).toMatch(/Index Cond: \(owner = o\.owner\)/);
    expect(plan).not.toMatch(/Seq Scan on webhook_deliveries/);
  });

  // A session's delete leaves its runs' pending deliveries (run_id NULL): the drop of the settled
  // ones reads only those, not every delivery whose run is gone.
  it("dropping settled deliveries whose run is gone reads webhook_deliveries_orphaned", async () => {
    const at = new Date().toISOString();
    const plan = await planOf(/^DELETE FROM webhook_deliveries WHERE run_id IS NULL/, () =>
      store.webhooks.record({
        id: "msg_absent",
        attempt: { at, statusCode: 200, error: null },
        next: { status: "delivered" },
      }),
    );
    expect(plan).toMatch(/using webhook_deliveries_orphaned on webhook_deliveries/);
  });
});
