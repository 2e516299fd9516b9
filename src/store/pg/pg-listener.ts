import pg from "pg";
import type { NotificationHandlers, RunNotifications } from "../notifications.js";
import type { Statement } from "./pg-batch.js";
import { keepAliveSettings } from "./pg-connection.js";

/** The channel of committed events: payload `runId:seq`. */
export const EVENTS_CHANNEL = "agent_run_events";
/** The channel of control requests (cancel, decisions): payload the run id. */
export const CONTROL_CHANNEL = "agent_run_control";
/** The channel of leases given up (an instance stopping): payload the instance's id. */
export const RELEASED_CHANNEL = "agent_runs_released";

/** The `application_name` of this process's listening connection (operators and tests find it by it). */
export const listenerName = (pid = process.pid): string => `agent-listener-${pid}`;

export interface PgListenerOptions {
  /** How the pool connects; the listener opens its own connection with it (never a pooled one). */
  connection: pg.ClientConfig;
  /** First wait before reconnecting, doubled up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /**
   * How often the listening connection is asked a `SELECT 1` (default PING_MS); one unanswered
   * within the same time is destroyed and replaced: a connection that went quiet without being
   * closed (a failover behind a virtual IP) would otherwise deliver nothing, for good.
   */
  pingMs?: number;
}

/** How often the listening connection is pinged by default (see PgListenerOptions.pingMs). */
export const PING_MS = 10_000;

/** The statement waking the instance that executes `runId` (sent at the commit of the batch it is in). */
export function controlNotification(runId: string): Statement {
  return { text: "SELECT pg_notify($1, $2)", values: [CONTROL_CHANNEL, runId] };
}

/** Parses `runId:seq`; null for anything else. */
export function parseEventsPayload(payload: string): { runId: string; seq: number } | null {
  const colon = payload.lastIndexOf(":");
  const seq = Number(payload.slice(colon + 1));
  if (colon <= 0 || !Number.isSafeInteger(seq)) return null;
  return { runId: payload.slice(0, colon), seq };
}

/**
 * One dedicated LISTEN connection for the process, opened on the first subscription. When it
 * drops (the server restarted, the backend was terminated, the network broke) it reconnects
 * with a doubling backoff and, once listening again, calls every subscriber's `resync`.
 */
export class PgListener implements RunNotifications {
  readonly #handlers = new Set<NotificationHandlers>();
  #client: pg.Client | null = null;
  #connected = false;
  #connecting = false;
  #closed = false;
  #backoffMs: number;
  #retry: NodeJS.Timeout | null = null;
  #ping: NodeJS.Timeout | null = null;

  constructor(private readonly options: PgListenerOptions) {
    this.#backoffMs = options.minBackoffMs ?? 100;
  }

  get connected(): boolean {
    return this.#connected;
  }

  subscribe(handlers: NotificationHandlers): () => void {
    this.#handlers.add(handlers);
    if (!this.#client && !this.#connecting && !this.#retry) void this.#connect();
    return () => void this.#handlers.delete(handlers);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
    const client = this.#client;
    this.#client = null;
    this.#connected = false;
    this.#stopPinging();
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    this.#connecting = true;
    const client = new pg.Client({
      ...this.options.connection,
      application_name: listenerName(),
      // Idle between notifications: keepalive finds a server that vanished (see KEEPALIVE_IDLE_MS).
      ...keepAliveSettings,
      connectionTimeoutMillis: 10_000,
      // A statement unanswered this long (a ping, see #startPinging) fails.
      query_timeout: this.options.pingMs ?? PING_MS,
    });
    client.on("error", () => this.#lost(client));
    client.on("end", () => this.#lost(client));
    client.on("notification", (message) => this.#dispatch(message.channel, message.payload ?? ""));
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}; LISTEN ${CONTROL_CHANNEL}; LISTEN ${RELEASED_CHANNEL}`);
    } catch {
      this.#connecting = false;
      await client.end().catch(() => {});
      this.#scheduleRetry();
      return;
    }
    this.#connecting = false;
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#connected = true;
    this.#backoffMs = this.options.minBackoffMs ?? 100;
    this.#startPinging(client);
    for (const handlers of [...this.#handlers]) handlers.resync?.();
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = null;
    this.#connected = false;
    this.#stopPinging();
    client.end().catch(() => {});
    this.#scheduleRetry();
  }

  /** Asks `client` a `SELECT 1` every pingMs, one at a time; unanswered within that, it is destroyed and replaced. */
  #startPinging(client: pg.Client): void {
    const pingMs = this.options.pingMs ?? PING_MS;
    let waiting = false;
    this.#ping = setInterval(() => {
      if (waiting) return;
      waiting = true;
      client.query("SELECT 1").then(
        () => {
          waiting = false;
        },
        () => {
          // Its socket may never close by itself (nothing answers on it): destroyed here.
          (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
          this.#lost(client);
        },
      );
    }, pingMs);
    this.#ping.unref();
  }

  #stopPinging(): void {
    if (this.#ping) clearInterval(this.#ping);
    this.#ping = null;
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retry) return;
    const wait = this.#backoffMs;
    this.#backoffMs = Math.min(wait * 2, this.options.maxBackoffMs ?? 5000);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.#connect();
    }, wait);
    this.#retry.unref();
  }

  #dispatch(channel: string, payload: string): void {
    if (channel === EVENTS_CHANNEL) {
      const parsed = parseEventsPayload(payload);
      if (parsed) for (const handlers of [...this.#handlers]) handlers.events?.(parsed.runId, parsed.seq);
    } else if (channel === CONTROL_CHANNEL && payload !== "") {
      for (const handlers of [...this.#handlers]) handlers.control?.(payload);
    } else if (channel === RELEASED_CHANNEL) {
      for (const handlers of [...this.#handlers]) handlers.released?.();
    }
  }
}
