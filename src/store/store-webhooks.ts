import type { ResolvedWebhookTarget } from "../domain/webhook.js";
import type { ListPage, RunPageQuery } from "./page.js";
import type { ListedDelivery } from "./run-lists.js";
import type { ClaimQuery } from "./webhook-claims.js";
import type { AttemptOutcome, PastCapQuery, WebhookDelivery } from "./webhooks.js";

/**
 * The webhook outbox: a delivery for each event of a run whose stored target asked for its
 * type, written with the event; the worker claims due ones, records each try, and gives up
 * what an owner has pending past WEBHOOK_MAX_PENDING_PER_KEY. A delivery outlives its run (its
 * session deleted): pending, it is claimed and tried as any other (`runId` null); once settled,
 * or settled when its run goes, it is dropped.
 */
export interface WebhookOutbox {
  /**
   * Claims up to `limit` deliveries due at `now`, leasing each until `leaseUntil`: of each
   * owner's, its oldest, at most its limit (`limits`, else `perOwner`) less its count in
   * `busy` (deliveries the caller is sending); of those, each owner's first before anyone's
   * second, then the oldest, at most `confined.room` of them the `confined.owners`'.
   * One owner's backlog takes no other's slots, nor every slot that frees.
   */
  claim(query: ClaimQuery): Promise<WebhookDelivery[]>;
  /**
   * Records a try: its attempt is added, and a pending delivery takes the outcome (a
   * failure with its reason). One that settled meanwhile (given up at the cap while its try
   * was under way, or tried twice after a lost lease) keeps how it settled.
   */
  record(outcome: AttemptOutcome): Promise<void>;
  /**
   * Gives back a claimed delivery whose try was cut before it ended (the server stopping):
   * due again at `at`, with no attempt recorded, if it is still pending and still leased
   * until `leaseUntil` (claimed by nobody else since).
   */
  release(query: { id: string; leaseUntil: number; at: number }): Promise<void>;
  /**
   * Puts off until `at` the pending deliveries of `owner` (null: the keyless server's) to `url`
   * that are due by `dueBy` (a claimed one is leased past it and keeps its lease): its receiver
   * failed a try, and they wait as that one does. Resolves how many it put off.
   */
  postpone(query: { owner: string | null; url: string; dueBy: number; at: number }): Promise<number>;
  /**
   * Gives up a claimed delivery without a try (its window closed while nobody sent it, e.g.
   * the server was down): `failed` with `reason`, finished `at`, if it is still pending and
   * still leased until `leaseUntil`. Resolves whether it gave the delivery up (false: another
   * claim holds it since, or it is no longer pending).
   */
  expire(query: { id: string; leaseUntil: number; reason: string; at: string }): Promise<boolean>;
  /** A page of the run's deliveries, oldest first, without their bodies (which are not read), by their event's seq (the page's key; see RunPageQuery). */
  page(query: RunPageQuery): Promise<ListPage<ListedDelivery>>;
  /** The run's target, which each of its deliveries was sent to (fixed at its start); null when it has none or there is no such run. */
  targetOf(runId: string): Promise<ResolvedWebhookTarget | null>;
  /** When the earliest pending delivery is due (ms since the epoch), null when none is. */
  nextDue(): Promise<number | null>;
  /**
   * Gives up each owner's pending deliveries past its oldest `cap` (its newest, by their
   * events' time): `failed` with `reason`, finished `at`, their bodies dropped (see
   * webhook-cap.ts). Returns how many of each owner's (null: keyless) it gave up.
   */
  giveUpPastCap(query: PastCapQuery): Promise<Map<string | null, number>>;
}
