import { z } from "zod";
import { type ApprovalPolicy, ApprovalPolicySchema } from "../domain/approval-policy.js";
import { isProfileName, type ProviderProfileName } from "../domain/provider-profile-name.js";
import { StoredWebhookTargetSchema, type WebhookTarget } from "../domain/webhook.js";
import type { Db } from "./database.js";
import { sessionHasRuns } from "./errors.js";
import { CorruptRowError, parseOptionalJsonColumn, toJson } from "./json.js";
import { type ListPage, PAGE_BYTES, readSizedPage } from "./page.js";
import { SQLITE_DROP_SETTLED_ORPHANS } from "./webhook-orphans.js";

export interface SessionRecord {
  id: string;
  owner: string | null;
  system: string | null;
  model: string | null;
  tools: string[] | null;
  approval: ApprovalPolicy | null;
  /** The workspace directory's name under WORKSPACE_ROOT. */
  workspace: string;
  workspaceShared: boolean;
  /** The provider profile the session's model requests use; null: OPENAI_PROVIDER, else detected. */
  providerProfile: ProviderProfileName | null;
  /** Whether the session's runs are offered the plan tools (a run may set its own). */
  planning: boolean;
  metadata: Record<string, unknown> | null;
  /** Where the session's runs post their events (a run may name its own); null: the server's default. */
  webhook: WebhookTarget | null;
  createdAt: string;
}

/** Whose a session is, and nothing else of it: see `sessions.access`. */
export interface SessionAccess {
  owner: string | null;
}

export interface SessionRow {
  id: string;
  owner: string | null;
  system: string | null;
  model: string | null;
  tools: string | null;
  approval: string | null;
  workspace: string;
  workspace_shared: number;
  provider_profile: string | null;
  planning: number;
  metadata: string | null;
  webhook: string | null;
  created_at: string;
}

/** The stored bytes of a session's variable columns (see rowsToRead); the same SQL over SQLite and PostgreSQL. */
export const SESSION_BYTES_SQL = `octet_length(id) + octet_length(workspace) + coalesce(octet_length(system), 0)
  + coalesce(octet_length(model), 0) + coalesce(octet_length(tools), 0) + coalesce(octet_length(approval), 0)
  + coalesce(octet_length(metadata), 0) + coalesce(octet_length(webhook), 0)`;

const ToolNamesSchema = z.array(z.string());
const MetadataSchema = z.record(z.string(), z.unknown());

export function sessionFromRow(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    owner: row.owner,
    system: row.system,
    model: row.model,
    tools: parseOptionalJsonColumn(ToolNamesSchema, row.tools, `session ${row.id} tools`),
    approval: parseOptionalJsonColumn(ApprovalPolicySchema, row.approval, `session ${row.id} approval`),
    workspace: row.workspace,
    workspaceShared: row.workspace_shared === 1,
    providerProfile: profileOf(row),
    planning: row.planning === 1,
    metadata: parseOptionalJsonColumn(MetadataSchema, row.metadata, `session ${row.id} metadata`),
    webhook: parseOptionalJsonColumn(StoredWebhookTargetSchema, row.webhook, `session ${row.id} webhook`),
    createdAt: row.created_at,
  };
}

function profileOf(row: SessionRow): ProviderProfileName | null {
  if (row.provider_profile === null) return null;
  if (!isProfileName(row.provider_profile)) {
    throw new CorruptRowError(
      `session ${row.id}: stored provider profile ${JSON.stringify(row.provider_profile)} is not one`,
    );
  }
  return row.provider_profile;
}

/** The columns a session is inserted with. */
export function sessionColumns(session: SessionRecord) {
  return {
    id: session.id,
    owner: session.owner,
    system: session.system,
    model: session.model,
    tools: toJson(session.tools),
    approval: toJson(session.approval),
    workspace: session.workspace,
    workspace_shared: session.workspaceShared ? 1 : 0,
    provider_profile: session.providerProfile,
    planning: session.planning ? 1 : 0,
    metadata: toJson(session.metadata),
    webhook: toJson(session.webhook),
    created_at: session.createdAt,
  };
}

export function sessionStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO sessions (id, owner, system, model, tools, approval, workspace, workspace_shared, provider_profile,
       planning, metadata, webhook, created_at)
     VALUES (@id, @owner, @system, @model, @tools, @approval, @workspace, @workspace_shared, @provider_profile,
       @planning, @metadata, @webhook, @created_at)`,
  );
  const byId = db.prepare("SELECT * FROM sessions WHERE id = ?");
  const byIdOwned = db.prepare("SELECT * FROM sessions WHERE id = ? AND owner IS ?");
  const ownerOf = db.prepare("SELECT owner FROM sessions WHERE id = ?");
  // The first page and the pages after a cursor are two statements: one with
  // `(@cursor IS NULL OR id < @cursor)` could not bound the index range by the cursor, and so
  // walked every newer session to reach a deep page (1.4 ms at 20,000 sessions).
  const firstPage = db.prepare("SELECT * FROM sessions WHERE owner IS +@owner ORDER BY id DESC LIMIT +@limit");
  const pageAfter = db.prepare(
    "SELECT * FROM sessions WHERE owner IS +@owner AND id < +@cursor ORDER BY id DESC LIMIT +@limit",
  );
  // The sizes of the rows a page may hold, before the rows themselves (see rowsToRead).
  const firstSizes = db
    .prepare(`SELECT ${SESSION_BYTES_SQL} FROM sessions WHERE owner IS +@owner ORDER BY id DESC LIMIT +@limit`)
    .pluck();
  const sizesAfter = db
    .prepare(
      `SELECT ${SESSION_BYTES_SQL} FROM sessions WHERE owner IS +@owner AND id < +@cursor ORDER BY id DESC LIMIT +@limit`,
    )
    .pluck();
  const remove = db.prepare("DELETE FROM sessions WHERE id = ?");
  const newestFinishedRun = db
    .prepare("SELECT id FROM runs WHERE session_id = +? AND status = 'finished' ORDER BY id DESC LIMIT 1")
    .pluck();
  const oldestEvents = db.prepare(
    "DELETE FROM run_events WHERE rowid IN (SELECT rowid FROM run_events WHERE run_id = +? ORDER BY seq LIMIT +?)",
  );
  const removeRun = db.prepare("DELETE FROM runs WHERE id = ?");
  // A deleted run's pending webhook deliveries stay (run_id NULL) to be sent; its settled ones go.
  const dropSettledOrphans = db.prepare(SQLITE_DROP_SETTLED_ORPHANS);
  // From the two partial indexes of unfinished runs, not from every run of the session.
  const hasUnfinishedRun = db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM runs WHERE session_id = @id AND status NOT IN ('finished', 'queued'))
           OR EXISTS (SELECT 1 FROM runs WHERE session_id = @id AND status = 'queued')`,
    )
    .pluck();
  const countOwned = db.prepare("SELECT COUNT(*) AS n FROM sessions WHERE owner = ?").pluck();
  const namingShared = db
    .prepare("SELECT EXISTS (SELECT 1 FROM sessions WHERE workspace = ? AND workspace_shared = 1)")
    .pluck();

  return {
    insert(session: SessionRecord): void {
      insert.run(sessionColumns(session));
    },
    /** One session; with `owner` given (a key's hash, or null), only if that owner created it. */
    get(id: string, owner?: string | null): SessionRecord | null {
      const row = (owner === undefined ? byId.get(id) : byIdOwned.get(id, owner)) as SessionRow | undefined;
      return row ? sessionFromRow(row) : null;
    },
    access(id: string): SessionAccess | null {
      return (ownerOf.get(id) as SessionAccess | undefined) ?? null;
    },
    /**
     * Newest first; the cursor is the last id of the previous page. At most `limit` sessions,
     * and only as many as their stored sizes fit in `bytes` (at least one; see rowsToRead).
     */
    list({
      owner,
      limit,
      cursor,
      bytes = PAGE_BYTES,
    }: {
      owner: string | null;
      limit: number;
      cursor: string | null;
      bytes?: number;
    }): ListPage<SessionRecord> {
      const query = (count: number) => ({ owner, cursor, limit: count });
      return readSizedPage({
        limit,
        bytes,
        sizes: (count) => (cursor === null ? firstSizes : sizesAfter).all(query(count)) as number[],
        rows: (count) => (cursor === null ? firstPage : pageAfter).all(query(count)) as SessionRow[],
        map: sessionFromRow,
        cursorOf: (s) => s.id,
      });
    },
    /** How many sessions `owner` (a key's hash) has. */
    countOf(owner: string): number {
      return countOwned.get(owner) as number;
    },
    /** Whether a session has the shared workspace `workspace` (as stored). */
    sharedWorkspaceInUse(workspace: string): boolean {
      return namingShared.get(workspace) === 1;
    },
    /**
     * Deletes the session row, and with it (cascading) whatever of it is left but its runs'
     * pending webhook deliveries (see deletePiece); refused (`active_run`) while a run of it is unfinished.
     */
    delete(id: string): boolean {
      this.refuseUnfinished(id);
      const deleted = remove.run(id).changes > 0;
      dropSettledOrphans.run();
      return deleted;
    },
    /** Throws `active_run` when a run of the session is unfinished (queued or live). */
    refuseUnfinished(id: string): void {
      if (hasUnfinishedRun.get({ id }) === 1) throw sessionHasRuns(id);
    },
    /**
     * Deletes one bounded piece of the session, from its newest finished run: up to `rows` of
     * that run's oldest events or, once it has none left, the run itself with its messages,
     * tool calls, steps and settled webhook deliveries (its pending ones stay in the outbox
     * without their run, to be sent and retried as any other: see webhook-orphans.ts). False
     * when the session has no finished run left. What is left is the session as it was before
     * its newest runs (while a run's events go, a replay of it starts later). Refused (`active_run`) while a run of the session is unfinished.
     */
    deletePiece(id: string, rows: number): boolean {
      this.refuseUnfinished(id);
      const run = newestFinishedRun.get(id) as string | undefined;
      if (run === undefined) return false;
      if (oldestEvents.run(run, rows).changes < rows) {
        removeRun.run(run);
        dropSettledOrphans.run();
      }
      return true;
    },
  };
}

export type SessionStore = ReturnType<typeof sessionStore>;
