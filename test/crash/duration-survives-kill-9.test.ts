/**
 * openapi.yaml, RunStats.durationMs: "the run's wall time ...: the time it executed, across
 * restarts, waits for approval included"; README: budgets count the whole run, "a run resumed
 * after a restart keeps counting its ... wall time". A run killed (kill -9) while it waited for
 * approval, or while its tool ran, did that wait and that work. The instance executing a run
 * stores its wall time while it waits (every third of RUN_LEASE_MS when the stored one lags by
 * half that), so a crash loses at most about half of RUN_LEASE_MS of it: once the stored
 * duration has caught up with what GET /runs/{id} showed, the run ended after the crash has at
 * least that (it went back to the duration of the run's last write, losing everything since).
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { finishedRun, until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "duration-kill" });

/** The run's `stats.durationMs` as stored, read beside the server. */
async function storedDuration(runId: string): Promise<number> {
  const sql = "SELECT stats FROM runs WHERE id = $1";
  let stats: string;
  if (crash.database) {
    const client = new pg.Client({ connectionString: crash.database.url });
    await client.connect();
    try {
      stats = (await client.query<{ stats: string }>(sql, [runId])).rows[0]?.stats ?? "{}";
    } finally {
      await client.end();
    }
  } else {
    const db = new Database(join(crash.dir, "agent.db"), { readonly: true });
    try {
      stats = (db.prepare(sql.replace("$1", "?")).pluck().get(runId) as string | undefined) ?? "{}";
    } finally {
      db.close();
    }
  }
  return (JSON.parse(stats) as { durationMs?: number }).durationMs ?? 0;
}

describe.each(["sqlite", "postgres"] as const)("durationMs across kill -9 (%s)", (backend) => {
  beforeEach(() => crash.prepare(backend));

  it.each([
    ["an approval wait", "ask", "echo x"],
    ["a running tool", "allow", "sleep 30.733"],
  ] as const)(
    "keeps %s the run did before the crash",
    async (_, policy, command) => {
      // The wall time is stored every second (a third of the lease's TTL) while the run waits.
      const a = await crash.start({ RUN_LEASE_MS: "3000" });
      crash.upstream.enqueue({ toolCalls: [{ id: "call_k", name: "shell", arguments: JSON.stringify({ command }) }] });
      const session = await api(a.url, "POST", "/sessions", { approval: { tools: { shell: policy } } });
      const runId = (await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" })).body.id as string;
      // The run waits (for a person, or for its tool) until its wall time reaches 1.5 s (on a
      // loaded machine its model request may take part of that: the wait is what is looked for).
      const waiting = policy === "ask" ? "awaiting_approval" : "running";
      const seen = await until(
        async () => (await api(a.url, "GET", `/runs/${runId}`)).body,
        (run) => run.status === waiting && run.stats.durationMs >= 1500,
        "the run's wall time to reach 1.5 s while it waits",
      );
      // Its stored wall time catches up with what GET showed while it waits on.
      await until(
        () => storedDuration(runId),
        (stored) => stored >= seen.stats.durationMs,
        "the stored wall time to reach what GET showed",
      );
      await crash.kill(a);

      crash.upstream.enqueue({ text: "done" });
      const b = await crash.restart({ env: { ON_RESTART: "abort" } });
      const end = await finishedRun(b, runId);
      expect(end.stopReason).toBe("aborted");
      expect(end.stats.durationMs).toBeGreaterThanOrEqual(seen.stats.durationMs);
    },
    30_000,
  );
});
