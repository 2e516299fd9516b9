import { Agent, request } from "undici";
import type { WebhookAttempt } from "../store/store.js";
import { guardedLookup, isPrivateAddress, literalHost } from "./address-guard.js";
import { retryAfterMs } from "./retry-schedule.js";
import { signedHeaders } from "./signature.js";

/** The most of a receiver's answer read (and dropped) before its connection is closed instead. */
const BODY_READ_MAX = 64 * 1024;

/** A try as recorded, and the wait its receiver asked for (Retry-After of a non-2xx answer; null: none). */
export interface SendResult extends WebhookAttempt {
  retryAfterMs: number | null;
}

/** Why a delivery can never succeed as addressed: it is not tried again. */
export class RefusedTarget extends Error {}

/** A try cut because the server is stopping: no attempt to record; the delivery is tried again after its lease. */
export class SendCut extends Error {}

/** Posts signed deliveries, refusing private and loopback targets unless `allowPrivate`. */
export class WebhookSender {
  readonly #dispatcher: Agent;
  /** Aborts every try under way (see `cut`). */
  readonly #cut = new AbortController();

  constructor(
    private readonly options: {
      key: Buffer | null;
      /** An owner's own signing key (ownerWebhookKeys), null for one whose API key is gone. */
      ownerKey: (owner: string) => Buffer | null;
      allowPrivate: boolean;
      timeoutMs: number;
    },
  ) {
    // The check sits in the connection's own lookup: the address refused is the one connected to.
    this.#dispatcher = new Agent({
      connect: options.allowPrivate ? {} : { lookup: guardedLookup as never },
      keepAliveTimeout: 10_000,
    });
  }

  /**
   * One try: the receiver's status code, or why there was none. Throws RefusedTarget when
   * the target may not be reached at all. Redirects are not followed (a 3xx is a failure).
   * Signed with the server's key and, for a delivery of an API key's session (`owner`), that
   * key's own too (ownerWebhookKeys).
   */
  async send(delivery: { id: string; url: string; body: string; owner: string | null }): Promise<SendResult> {
    const at = new Date().toISOString();
    const host = literalHost(delivery.url);
    if (!this.options.allowPrivate && host !== null && isPrivateAddress(host)) {
      throw new RefusedTarget(`${host} is a private or loopback address (WEBHOOK_ALLOW_PRIVATE=1 allows it)`);
    }
    if (!this.options.key)
      return { at, statusCode: null, error: "WEBHOOK_SECRET is not set: nothing is sent unsigned", retryAfterMs: null };
    const ownerKey = delivery.owner === null ? null : this.options.ownerKey(delivery.owner);
    const headers = signedHeaders({
      keys: ownerKey ? [this.options.key, ownerKey] : [this.options.key],
      id: delivery.id,
      timestamp: Math.floor(Date.now() / 1000),
      body: delivery.body,
    });
    try {
      const response = await request(delivery.url, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json", "user-agent": "agent-server-webhooks" },
        body: delivery.body,
        dispatcher: this.#dispatcher,
        signal: AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), this.#cut.signal]),
      });
      // The try lasts until the body has ended (read to free the connection for the next send),
      // at most BODY_READ_MAX bytes and within the try's deadline: a body left to drain after the
      // try was outside every bound on sends, so a receiver that answered at once and never ended
      // its body held a connection for each delivery (1,370 in 8 s for one key's runs).
      await response.body.dump({ limit: BODY_READ_MAX });
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      const wait = ok ? null : retryAfterMs(response.headers["retry-after"]);
      return { at, statusCode: response.statusCode, error: null, retryAfterMs: wait };
    } catch (err) {
      if (this.#cut.signal.aborted) throw new SendCut("the server is stopping");
      const code = (err as { code?: string; cause?: { code?: string } }).code;
      if (code === "WEBHOOK_PRIVATE_ADDRESS") throw new RefusedTarget((err as Error).message);
      const name = (err as Error).name === "TimeoutError" ? "timed out" : (err as Error).message;
      return { at, statusCode: null, error: name, retryAfterMs: null };
    }
  }

  /** Cuts every try under way: each throws SendCut. */
  cut(): void {
    this.#cut.abort();
  }

  close(): Promise<void> {
    return this.#dispatcher.close();
  }
}
