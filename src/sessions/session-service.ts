import { join, relative, resolve } from "node:path";
import type { Logger } from "pino";
import type { ApprovalCeiling } from "../domain/approval-ceiling.js";
import type { ApprovalPolicy } from "../domain/approval-policy.js";
import type { WebhookTarget } from "../domain/webhook.js";
import { badRequest, invalidCursor, notFound, shuttingDown } from "../errors.js";
import { isIdOf, newId } from "../ids.js";
import type { ProviderProfileName } from "../model/provider-profile.js";
import type { RunManager } from "../runs/run-manager.js";
import { keyOfCursor, MAX_KEY, withinBytes } from "../store/page.js";
import type { SessionRecord, Store } from "../store/store.js";
import { outcomeOf } from "../store/write-outcome.js";
import { StringTable } from "../string-table.js";
import { createSessionWorkspace, isValidWorkspaceName, removeSessionWorkspace } from "../tools/session-workspace.js";
import { checkWebhookTarget } from "../webhooks/target-policy.js";
import { refuseLooserThanCeiling, refuseUnknownTools } from "./policy-checks.js";
import { deleteSessionRows } from "./session-delete.js";
import { SessionQuota } from "./session-quota.js";
import { SessionRecords } from "./session-records.js";
import { MAX_SHARED_WORKSPACE_NAME, type SessionView, sessionView, sharedPrefix } from "./session-view.js";
import { refusingMovedRoot, remakeSharedWorkspace, removeWorkspaceOf } from "./session-workspaces.js";

export interface CreateSessionInput {
  system?: string;
  model?: string;
  tools?: string[];
  approval?: ApprovalPolicy;
  workspace?: string;
  providerProfile?: ProviderProfileName;
  planning?: boolean;
  metadata?: Record<string, unknown>;
  webhook?: WebhookTarget;
}

/** Sessions: their records, their workspaces, and who may see them (`owner`). */
export class SessionService {
  constructor(
    private readonly deps: {
      store: Store;
      manager: RunManager;
      workspaceRoot: string;
      /** WORKSPACE_ROOT's real path at start, where the tools work (and so workspaces are deleted). */
      workspaceRealRoot: string;
      toolNames: readonly string[];
      logger: Logger;
      /** Sessions one owner (API key) may keep; 0 or absent: no limit. */
      maxSessionsPerKey?: number;
      /** APPROVAL_POLICY_MAX; absent: no ceiling. */
      approvalCeiling?: ApprovalCeiling;
      webhookPolicy: { signing: boolean; allowPrivate: boolean };
    },
  ) {
    this.#quota = new SessionQuota({ store: deps.store, limit: deps.maxSessionsPerKey ?? 0 });
    this.#root = resolve(deps.workspaceRoot);
    this.#realRoot = deps.workspaceRealRoot;
  }

  /** The workspace root as an absolute path, resolved once (the server never changes its directory). */
  readonly #root: string;
  readonly #realRoot: string;

  readonly #quota: SessionQuota;
  /** The records of sessions created or started in here lately (see forStart). */
  readonly #records = new SessionRecords();
  /** Sessions whose DELETE this instance has taken and not yet finished: already gone to its callers. */
  readonly #deleting = new StringTable<true>();
  /** Per session, the starts in flight here: past the session's lookup, their run not yet admitted. */
  readonly #starting = new StringTable<Set<Promise<unknown>>>();

  /** See refuseLooserThanCeiling: a session's policy, or a run's over its session's (`under`). */
  checkApprovalCeiling({ approval, under }: { approval?: ApprovalPolicy | null; under?: ApprovalPolicy | null }): void {
    refuseLooserThanCeiling({ approval, under, toolNames: this.deps.toolNames, ceiling: this.deps.approvalCeiling });
  }

  /** See refuseUnknownTools. */
  checkToolNames({ tools, approval }: { tools?: readonly string[]; approval?: ApprovalPolicy | null }): void {
    refuseUnknownTools({ tools, approval, known: this.deps.toolNames });
  }

  async create(input: CreateSessionInput, owner: string | null): Promise<SessionView> {
    if (!this.deps.manager.accepting) throw shuttingDown();
    this.checkToolNames(input);
    this.checkApprovalCeiling({ approval: input.approval });
    checkWebhookTarget(input.webhook, this.deps.webhookPolicy);
    if (input.workspace !== undefined && !isValidWorkspaceName(input.workspace)) {
      throw badRequest(
        "INVALID_WORKSPACE",
        `workspace must be 1-${MAX_SHARED_WORKSPACE_NAME} letters, digits, '.', '_' or '-', starting with a letter or digit`,
      );
    }
    return this.#quota.within(owner, async () => {
      const id = newId("ses");
      // Taken with the id, before any wait: the list's order (by id) and createdAt agree.
      const createdAt = new Date().toISOString();
      // With API keys, a shared workspace is shared among one key's sessions, never across keys.
      const shared = input.workspace === undefined ? undefined : `${sharedPrefix(owner)}${input.workspace}`;
      const workspace = await refusingMovedRoot(
        createSessionWorkspace({ root: this.#root, realRoot: this.#realRoot, sessionId: id, shared }),
      );
      const record: SessionRecord = {
        id,
        owner,
        system: input.system ?? null,
        model: input.model ?? null,
        tools: input.tools ?? null,
        approval: input.approval ?? null,
        workspace: relative(this.#root, workspace.path),
        workspaceShared: workspace.shared,
        providerProfile: input.providerProfile ?? null,
        planning: input.planning ?? false,
        metadata: input.metadata ?? null,
        webhook: input.webhook ?? null,
        createdAt,
      };
      const { store } = this.deps;
      let unknown: unknown = null;
      try {
        await store.sessions.insert(record, this.#quota.limitOf(owner));
      } catch (err) {
        // An insert whose answer was lost may have been stored: its workspace stays with it
        // unless it was not (an empty directory is left at worst; a retried DELETE removes it).
        const outcome = await outcomeOf(err, async () => (await store.sessions.access(id)) !== null);
        if (outcome === "not done") {
          await removeWorkspaceOf({ root: this.#realRoot, record, store });
          throw this.#quota.refusal(err);
        }
        if (outcome === "unknown") unknown = err;
      }
      // Once stored (or maybe stored), a shared workspace is made again (see remakeSharedWorkspace).
      if (shared !== undefined) {
        const remade = { root: this.#root, realRoot: this.#realRoot, sessionId: id, shared, store };
        await refusingMovedRoot(remakeSharedWorkspace(remade));
      }
      if (unknown !== null) throw this.#quota.refusal(unknown);
      this.#records.put(record);
      return sessionView(record, null);
    });
  }

  /** The session if it exists, `owner` may see it and it is not being deleted; else NOT_FOUND. */
  async record(id: string, owner: string | null): Promise<SessionRecord> {
    const record = await this.deps.store.sessions.get(id, owner);
    if (!record || this.#deleting.has(id)) throw notFound("session", id);
    return record;
  }

  /**
   * The session for a run's start (see `record`), as kept since its creation or a start here
   * (see SessionRecords): a session deleted by another instance meanwhile is found gone by
   * the run's insert (NOT_FOUND).
   */
  async forStart(id: string, owner: string | null): Promise<SessionRecord> {
    const kept = this.#records.get(id);
    if (kept === undefined) {
      const record = await this.record(id, owner);
      this.#records.put(record);
      return record;
    }
    if (kept.owner !== owner || this.#deleting.has(id)) throw notFound("session", id);
    return kept;
  }

  /**
   * That the session exists, `owner` may see it and it is not being deleted; else NOT_FOUND.
   * Its owner alone is read (`sessions.access`), not its system prompt nor its metadata: what a
   * request about the session that shows none of it checks.
   */
  async access(id: string, owner: string | null): Promise<void> {
    const access = await this.deps.store.sessions.access(id);
    if (!access || access.owner !== owner || this.#deleting.has(id)) throw notFound("session", id);
  }

  /** The session's active run, if any, when the caller may see the session (see `access`). */
  async activeRunId(id: string, owner: string | null): Promise<string | null> {
    await this.access(id, owner);
    return this.deps.manager.activeRunId(id);
  }

  async get(id: string, owner: string | null): Promise<SessionView> {
    const record = await this.record(id, owner);
    return sessionView(record, await this.deps.manager.activeRunId(id));
  }

  /** Newest first; at most `limit` sessions and PAGE_BYTES of JSON (at least one session). */
  async list(owner: string | null, page: { limit: number; cursor: string | null }) {
    if (page.cursor !== null && !isIdOf("ses", page.cursor)) throw invalidCursor();
    // A session whose delete is taken here is gone to the list too (the cursor stays the store's).
    // A page they alone filled is read on from its cursor: a page holds a session when there is one after it.
    let result = await this.deps.store.sessions.list({ owner, ...page });
    let shown = result.items.filter((r) => !this.#deleting.has(r.id));
    while (shown.length === 0 && result.nextCursor !== null) {
      result = await this.deps.store.sessions.list({ owner, limit: page.limit, cursor: result.nextCursor });
      shown = result.items.filter((r) => !this.#deleting.has(r.id));
    }
    const items = await Promise.all(shown.map(async (r) => sessionView(r, await this.deps.manager.activeRunId(r.id))));
    return withinBytes({ items, nextCursor: result.nextCursor }, { cursorOf: (s) => s.id });
  }

  /**
   * A page of the session's committed messages, oldest first or newest first; the cursor is the
   * seq of the previous page's last message (INVALID_CURSOR past MAX_KEY). At most `limit`
   * messages and PAGE_BYTES of JSON (at least one message).
   */
  async messages(
    id: string,
    owner: string | null,
    page: { limit: number; cursor: string | null; order?: "oldest" | "newest" },
  ) {
    await this.access(id, owner);
    const seq = page.cursor === null ? null : keyOfCursor(page.cursor);
    if (page.cursor !== null && seq === null) throw invalidCursor();
    const result = await this.deps.store.messages.page(
      page.order === "newest"
        ? { sessionId: id, afterSeq: 0, beforeSeq: seq ?? MAX_KEY + 1, limit: page.limit }
        : { sessionId: id, afterSeq: seq ?? 0, limit: page.limit },
    );
    return withinBytes(result, { cursorOf: (m) => String(m.seq) });
  }

  /** The absolute workspace directory of a session, under the root's real path at start (as its tools see it). */
  workspacePath(record: SessionRecord): string {
    return join(this.#realRoot, record.workspace);
  }

  /**
   * Ends the queued runs (none starts when the active run ends), aborts the active run (waiting
   * for its end), then deletes the session, its runs and its own workspace, or its shared one
   * once no other session has it (see removeWorkspaceOf). From the moment it is taken the
   * session is gone to this instance's callers (NOT_FOUND): no run starts in it while its rows
   * are deleted (over SQLite, a piece at a time); if the delete fails, it is back.
   */
  async delete(id: string, owner: string | null): Promise<void> {
    const record = await this.record(id, owner).catch(async (err) => {
      // Best effort: the answer is the NOT_FOUND (or the failure) whatever becomes of it.
      await this.#removeLeftWorkspace(id).catch(() => {});
      throw err;
    });
    this.#deleting.set(id, true);
    this.#records.forget(id);
    try {
      await this.#deleteTaken(id, record);
    } finally {
      // Also after a delete that failed part way (over SQLite, a piece at a time): what is
      // kept of the history may hold messages of runs deleted.
      this.deps.manager.history.forget(id);
      this.#deleting.delete(id);
    }
  }

  /**
   * Runs `start` (a run's admission in session `id`, found already) unless the session's
   * delete was taken meanwhile (NOT_FOUND); a delete taken while it is in flight ends the run
   * it admits.
   */
  async starting<T>(id: string, start: () => Promise<T>): Promise<T> {
    if (this.#deleting.has(id)) throw notFound("session", id);
    // A start that throws at once is a rejection too: nothing is left in flight for it.
    const started = (async () => start())();
    const inFlight = this.#starting.get(id) ?? new Set<Promise<unknown>>();
    this.#starting.set(id, inFlight);
    inFlight.add(started);
    try {
      return await started;
    } finally {
      inFlight.delete(started);
      if (inFlight.size === 0) this.#starting.delete(id);
    }
  }

  /**
   * The private workspace of a session that no longer exists at all (a delete or an insert whose
   * answer was lost left it): removed when a DELETE names it, which finds no session (NOT_FOUND).
   */
  async #removeLeftWorkspace(id: string): Promise<void> {
    if (!isIdOf("ses", id) || this.#deleting.has(id) || (await this.deps.store.sessions.access(id)) !== null) return;
    await removeSessionWorkspace({ root: this.#realRoot, path: join(this.#realRoot, id), shared: false });
  }

  async #deleteTaken(id: string, record: SessionRecord): Promise<void> {
    await deleteSessionRows({
      id,
      store: this.deps.store,
      manager: this.deps.manager,
      inFlight: () => this.#starting.get(id),
    });
    this.#records.forget(id);
    try {
      await removeWorkspaceOf({ root: this.#realRoot, record, store: this.deps.store });
    } catch (err) {
      // The session is gone; a directory a tool made undeletable is left for the operator.
      this.deps.logger.warn({ err, sessionId: id }, "could not remove the session's workspace");
    }
  }
}
