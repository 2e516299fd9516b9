import type { Logger } from "pino";
import { Deadline } from "../deadline.js";
import type { AttemptOutcome, Store, WebhookDelivery } from "../store/store.js";
import { CoolingTargets } from "./cooling-targets.js";
import { GONE_REASON, noSuccessReason, notSentReason, refusedReason } from "./delivery-reasons.js";
import { GivenUpReport } from "./given-up-report.js";
import { CAP_CHECK_POLLS, capReason } from "./pending-cap.js";
import { closedBeforeClaim, nextTryAt, type RetrySchedule } from "./retry-schedule.js";
import { RefusedTarget, SendCut, type WebhookSender } from "./send.js";
import { SendShares, type TryOutcome } from "./send-shares.js";
import {
  COOLING_GRACE_MS,
  FAILING_SLOTS,
  STOP_GRACE_MS,
  STUCK_SLOTS,
  stuckAfterMs,
  WEBHOOK_SLOTS,
  WEBHOOK_SLOTS_PER_OWNER,
  type WebhookFacts,
} from "./worker-limits.js";

/** A send under way: its owner, and whether it has been unanswered past the stuck threshold. */
interface Sending {
  owner: string | null;
  stuck: boolean;
}

/**
 * Sends the outbox's due deliveries from a pool of WEBHOOK_SLOTS sends: an owner's share of
 * them grows with its receivers' 2xx answers and falls back to one on a failure (SendShares),
 * and the failing owners share FAILING_SLOTS. A send unanswered past the stuck threshold
 * (stuckAfterMs) leaves the pool for one of STUCK_SLOTS and stops its owner claiming until it
 * ends, and its 2xx, if it comes, does not grow the share: a receiver that answers quickly for
 * a while and then hangs holds the pool for a second, not a timeout. Whenever a send ends or is
 * found stuck (or every poll while all are busy) more are claimed within these limits, so one
 * owner's slow, flooded or dead target delays no other's. Each is claimed with a lease (a crash
 * mid-send retries it after the lease), sent, and its try recorded: 2xx delivered, 410 Gone
 * failed at once (the receiver wants no more), anything else tried again on the schedule until
 * its window closes. What an owner has pending past WEBHOOK_MAX_PENDING_PER_KEY is given up now
 * and then (see pending-cap.ts), and logged (GivenUpReport).
 */
export class WebhookWorker {
  #timer: NodeJS.Timeout | null = null;
  #pass: Promise<void> | null = null;
  #stopped = true;
  /** The sends under way (whose, and whether stuck), and how many of them each owner's. */
  readonly #sending = new Map<Promise<void>, Sending>();
  readonly #busy = new Map<string | null, number>();
  readonly #shares = new SendShares(WEBHOOK_SLOTS_PER_OWNER);
  readonly #cooling: CoolingTargets;
  readonly #givenUp: GivenUpReport;
  #capAppliedAt = Number.NEGATIVE_INFINITY;
  /** Wakes the drain loop's wait (a send found stuck). */
  #nudge: (() => void) | null = null;
  readonly #stuckMs: number;

  constructor(
    private readonly deps: {
      store: Store;
      sender: WebhookSender;
      schedule: RetrySchedule;
      timeoutMs: number;
      pollMs: number;
      logger: Logger;
      /** Told of each try's outcome and of each delivery given up (the metrics); must not throw. */
      facts?: WebhookFacts;
      /** WEBHOOK_MAX_PENDING_PER_KEY (0: no cap). */
      maxPendingPerKey: number;
    },
  ) {
    this.#givenUp = new GivenUpReport({ logger: deps.logger, cap: deps.maxPendingPerKey });
    this.#stuckMs = stuckAfterMs(deps.timeoutMs);
    this.#cooling = new CoolingTargets({ pollMs: deps.pollMs, graceMs: COOLING_GRACE_MS + 2 * deps.pollMs });
  }

  start(): void {
    this.#stopped = false;
    this.#wake(0);
  }

  /**
   * Stops claiming; the tries under way get STOP_GRACE_MS to end, and no longer than until
   * `closeBy` (the deadline the server's shutdown shares between its closing stages, which a
   * receiver slower than that must not stretch), then are cut: a cut try records no attempt,
   * and its delivery is given back, due at once (for the next start, or another instance).
   */
  async stop(closeBy = Deadline.NONE): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#nudge?.();
    const ended = await closeBy.wait(this.#pass ?? Promise.resolve(), STOP_GRACE_MS);
    if (!ended) {
      const cut = this.#sending.size;
      this.deps.sender.cut();
      await this.#pass;
      if (cut > 0)
        this.deps.logger.warn({ cut }, "webhook tries cut by the shutdown: their deliveries are tried again later");
    }
    await this.deps.sender.close();
  }

  #wake(ms: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#pass = this.#drain().catch((err) => this.deps.logger.error({ err }, "webhook deliveries failed"));
      void this.#pass.then(() => this.#wake(this.deps.pollMs));
    }, ms);
    this.#timer.unref();
  }

  /** Claims and sends until nothing is due or under way (or the worker stops, its sends awaited). */
  async #drain(): Promise<void> {
    const { store, timeoutMs, pollMs } = this.deps;
    try {
      while (!this.#stopped) {
        await this.#applyCap();
        // Stuck sends (up to STUCK_SLOTS of them) are out of the pool, and their owners claim none.
        let stuck = 0;
        const stuckOwners = new Set<string | null>();
        for (const { owner, stuck: isStuck } of this.#sending.values())
          if (isStuck) {
            stuck++;
            stuckOwners.add(owner);
          }
        const room = WEBHOOK_SLOTS - (this.#sending.size - Math.min(stuck, STUCK_SLOTS));
        if (room > 0) {
          const now = Date.now();
          const failing = this.#shares.failing;
          let failingBusy = 0;
          for (const owner of failing) failingBusy += this.#busy.get(owner) ?? 0;
          const claimed = await store.webhooks.claim({
            now,
            leaseUntil: now + timeoutMs * 2 + 1000,
            limit: room,
            perOwner: this.#shares.first,
            limits: stuckOwners.size
              ? new Map([...this.#shares.limits, ...[...stuckOwners].map((owner) => [owner, 0] as const)])
              : this.#shares.limits,
            busy: this.#busy,
            confined: { owners: failing, room: FAILING_SLOTS - failingBusy },
          });
          for (const delivery of claimed) this.#send(delivery);
        }
        if (!this.#sending.size) return;
        // A send's end or a stuck one frees a slot; a poll finds deliveries of owners with slots free meanwhile.
        let poll: NodeJS.Timeout | undefined;
        await Promise.race([
          ...this.#sending.keys(),
          new Promise<void>((resolve) => {
            poll = setTimeout(resolve, pollMs);
            this.#nudge = resolve;
          }),
        ]);
        this.#nudge = null;
        clearTimeout(poll);
      }
    } finally {
      await Promise.all(this.#sending.keys());
    }
  }

  /** Every CAP_CHECK_POLLS polls, gives up what owners have pending past WEBHOOK_MAX_PENDING_PER_KEY, and reports it. */
  async #applyCap(): Promise<void> {
    const { store, pollMs, maxPendingPerKey: cap } = this.deps;
    const now = Date.now();
    if (cap === 0 || now - this.#capAppliedAt < pollMs * CAP_CHECK_POLLS) return;
    this.#capAppliedAt = now;
    const at = new Date(now).toISOString();
    const given = await store.webhooks.giveUpPastCap({ cap, reason: capReason(cap), at });
    this.#givenUp.report(given);
    let count = 0;
    for (const n of given.values()) count += n;
    if (count > 0) this.deps.facts?.webhookGivenUp("cap", count);
  }

  /**
   * Sends `delivery` in a slot of its owner's, freed when its try is recorded; past the stuck
   * threshold (one timer, cleared when it ends) it is marked stuck and the drain loop woken.
   */
  #send(delivery: WebhookDelivery): void {
    const { owner } = delivery;
    this.#busy.set(owner, (this.#busy.get(owner) ?? 0) + 1);
    const state: Sending = { owner, stuck: false };
    const stuckTimer = setTimeout(() => {
      state.stuck = true;
      this.#nudge?.();
    }, this.#stuckMs);
    stuckTimer.unref();
    const sending: Promise<void> = this.#deliver(delivery, state)
      .catch((err) => this.deps.logger.error({ err, deliveryId: delivery.id }, "webhook delivery failed"))
      .finally(() => {
        clearTimeout(stuckTimer);
        this.#sending.delete(sending);
        const left = (this.#busy.get(owner) ?? 1) - 1;
        if (left > 0) this.#busy.set(owner, left);
        else this.#busy.delete(owner);
      });
    this.#sending.set(sending, state);
  }

  async #deliver(delivery: WebhookDelivery, state: Sending): Promise<void> {
    const { store, sender, schedule, logger, facts } = this.deps;
    // Its window closed before anyone sent it (the server down longer than that): given up untried.
    const createdAt = Date.parse(delivery.createdAt);
    if (closedBeforeClaim(schedule, { createdAt, now: Date.now() }) && delivery.nextAttemptAt !== null) {
      const reason = notSentReason(schedule.windowMs);
      const at = new Date().toISOString();
      // Another claim may hold it since (this one's lease ran out): then that claim decides.
      if (await store.webhooks.expire({ id: delivery.id, leaseUntil: delivery.nextAttemptAt, reason, at })) {
        facts?.webhookGivenUp("window", 1);
        logger.warn({ deliveryId: delivery.id, runId: delivery.runId }, "webhook delivery given up");
      }
      return;
    }
    // Its receiver failed a try of another of its owner's deliveries: this one waits as that one does
    // (no try), until after that one's next try.
    const wait = this.#cooling.until(delivery.owner, delivery.url, delivery.id, Date.now());
    if (wait !== null && delivery.nextAttemptAt !== null) {
      await store.webhooks.release({ id: delivery.id, leaseUntil: delivery.nextAttemptAt, at: wait });
      return;
    }
    try {
      const { retryAfterMs, ...attempt } = await sender.send(delivery);
      const ok = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
      // Standard Webhooks: 410 Gone says the receiver wants no more deliveries, so none is tried again.
      const gone = attempt.statusCode === 410;
      const outcome: TryOutcome = !ok ? "failed" : state.stuck ? "slow" : "ok";
      this.#shares.record(delivery.owner, outcome);
      const at =
        ok || gone
          ? null
          : nextTryAt(schedule, {
              failures: delivery.attempts.length + 1,
              createdAt,
              now: Date.now(),
              retryAfterMs,
            });
      const next: AttemptOutcome["next"] = ok
        ? { status: "delivered" }
        : at === null
          ? { status: "failed", reason: gone ? GONE_REASON : noSuccessReason(schedule.windowMs) }
          : { status: "pending", at };
      await store.webhooks.record({ id: delivery.id, attempt, next });
      if (ok) this.#cooling.succeeded(delivery.owner, delivery.url);
      else if (at !== null) {
        this.#cooling.failed(delivery.owner, delivery.url, delivery.id, at);
        // Its owner's others to the receiver wait as it does, put off in one write (not each claimed
        // and given back), a millisecond more: at the step's end it is tried first again, so the
        // step grows with its failures instead of starting over with an untried delivery's (those
        // due before it, arrived late in the step, wait for it: CoolingTargets).
        await store.webhooks.postpone({ owner: delivery.owner, url: delivery.url, dueBy: Date.now(), at: at + 1 });
      }
      facts?.webhookTry(ok ? "delivered" : "failed");
      if (next.status === "failed") {
        facts?.webhookGivenUp(gone ? "gone" : "window", 1);
        logger.warn({ deliveryId: delivery.id, runId: delivery.runId, gone }, "webhook delivery given up");
      }
    } catch (err) {
      // Cut by the shutdown: no attempt to record; the delivery is due again at once.
      if (err instanceof SendCut) {
        const leaseUntil = delivery.nextAttemptAt;
        if (leaseUntil !== null) await store.webhooks.release({ id: delivery.id, leaseUntil, at: Date.now() });
        facts?.webhookTry("cut");
        return;
      }
      if (!(err instanceof RefusedTarget)) throw err;
      this.#shares.record(delivery.owner, "failed");
      const attempt = { at: new Date().toISOString(), statusCode: null, error: err.message };
      await store.webhooks.record({
        id: delivery.id,
        attempt,
        next: { status: "failed", reason: refusedReason(err.message) },
      });
      facts?.webhookTry("refused");
      facts?.webhookGivenUp("refused", 1);
      logger.warn({ deliveryId: delivery.id, runId: delivery.runId, reason: err.message }, "webhook target refused");
    }
  }
}
