import { setTimeout as sleep } from "node:timers/promises";
import { encodeEvent, publishEvents, type EncodedEvent, type EventBus } from "@emailsvc/events";
import { testModeBucket, type Bucket, type CounterStore, type Policy } from "@emailsvc/ratelimit";
import { tenantOfKey } from "@emailsvc/tenancy";
import { Rerunner } from "@emailsvc/async";
import { newId } from "@emailsvc/ids";
import type { CrossTenantCollection, TenantFilter } from "@emailsvc/storage";
import type { CampaignDoc, RecipientDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import type { Deps } from "../usecases/deps.js";
import { finishCampaign } from "../usecases/finish-campaign.js";
import { countLedger, handOver, handOverHeld, inFlight, positionOf, reconcile, rowRange } from "../usecases/ledger.js";
import { snapshotAudience } from "../usecases/snapshot-audience.js";
import { startDueCampaign } from "../usecases/start-due-campaign.js";

/** Recipients handed to delivery per step (one ledger write, one publish). */
const HANDOFF_BATCH = 1000;
/**
 * Recipients per `email.send.requested` event. One event per recipient cost
 * more than the rest of the hand-over (encoded, appended, routed, decoded and,
 * on Kafka, produced, fetched and committed each); a hundred make that cost
 * a hundredth, and an event still small (≈ 7 KB, against Kafka's 1 MB) and
 * many per in-flight bound (50 in 5,000), so that the batches spread over the
 * partitions and delivery replicas share a campaign.
 */
export const RECIPIENTS_PER_EVENT = 100;
/** A recipient handed over this long ago without an answer is handed over again (delivery ignores a repeat). */
const STALE_QUEUED_MS = 60_000;
/**
 * Counts that still say pending or queued and have not moved for this long,
 * with nothing pending left to walk, are checked against the ledger: a write
 * of an outcome that failed between the row and its count, or a store that
 * lost a concurrent `$inc` (FerretDB, across replicas), would otherwise hold
 * a finished campaign until the STALE_QUEUED_MS recheck. Each check that
 * finds rows still open (mail deferred for hours) doubles the wait, up to
 * STALE_QUEUED_MS.
 */
const STALLED_COUNTS_MS = 5_000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface DispatcherOptions {
  /** Names this process in leases. */
  owner: string;
  /** How often campaigns are looked for (default 500 ms); `wake()` looks at once. */
  intervalMs?: number;
  /** How long a lease holds a campaign without renewal (default 15 s): a crashed dispatcher's campaign is taken over after it. */
  leaseMs?: number;
}

/**
 * Hands the recipients of sending campaigns to delivery. For each campaign
 * one dispatcher at a time holds a lease on it (renewed at every step) and
 * runs it:
 *
 * 1. On taking a campaign (at start, or over from a dispatcher that died),
 *    it recounts the counts from the ledger (not when it takes up again its
 *    own run that ended cleanly, a resume: see run), and hands over again
 *    every recipient already handed over and not yet answered (a crash may
 *    have come between the position's write and the publish, or delivery's
 *    `held` answer may have been lost; delivery's records make a repeat a
 *    no-op).
 * 2. It walks the pending rows in id order, a batch at a time within the
 *    tenant's sending rate and the in-flight bound: the campaign's hand-over
 *    position and its counts move (pending -> queued, one guarded write; no
 *    row is written: usecases/ledger.ts), then one publish of their
 *    `email.send.requested` events, RECIPIENTS_PER_EVENT recipients each
 *    (keyed by the first one's email id). Rows delivery held
 *    for a pause are handed over again once nothing after the position is left. While the audience snapshot is not complete (the
 *    send request copies only its first page by default) it copies a page
 *    whenever nothing copied is left to walk or the in-flight bound leaves
 *    nothing to hand over: the pages come in id order, after every row
 *    walked so far.
 * 3. When the snapshot is complete and nothing is pending or queued any
 *    more, the campaign is `sent`.
 *
 * A pause or cancel is seen at the next step (the campaign is read at each);
 * a scheduled campaign is started when due.
 */
export class CampaignDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private readonly running = new Map<string, Promise<void>>();
  /** Campaigns whose last run here ended with every step done (`tenant/id`): taken up again, they need no recount. */
  private readonly endedCleanly = new Set<string>();
  private readonly looker = new Rerunner(
    () => this.tick(),
    (err) => this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "campaign dispatcher: looking for work failed; retrying on its timer"),
  );
  private stopped = false;
  private readonly leaseMs: number;

  constructor(
    private readonly deps: Deps,
    private readonly campaigns: CrossTenantCollection<CampaignDoc>,
    private readonly tenants: { forTenant(tenant: string): TenantRepositories },
    private readonly bus: EventBus,
    private readonly limiter: CounterStore | undefined,
    private readonly options: DispatcherOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 15_000;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.options.intervalMs ?? 500);
    this.timer.unref();
    this.wake();
  }

  /** Looks for work now (or right after the look in progress). */
  wake(): void {
    this.looker.kick();
  }

  /** Stops taking work; each campaign run ends at its next step and gives its lease back. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.looker.stop();
    await Promise.allSettled([...this.running.values()]);
  }

  private async tick(): Promise<void> {
    const now = this.deps.now();
    const found = await this.campaigns.find({ status: { $in: ["sending", "scheduled"] } }, { limit: 200 });
    for (const campaign of found) {
      if (this.stopped) return;
      const repos = this.tenants.forTenant(campaign.tenant);
      let doc: CampaignDoc | null = campaign;
      if (campaign.status === "scheduled") {
        if ((campaign.send_at ?? 0) > now) continue;
        doc = await startDueCampaign(this.deps, repos, campaign);
        if (!doc) continue;
      }
      const key = `${doc.tenant}/${doc._id}`;
      if (this.running.has(key)) continue;
      const taken = await this.take(repos, doc);
      if (!taken) continue;
      // Taken up again after this dispatcher's own run ended cleanly (a pause, then a resume): nothing
      // can have been left half done, so the counts are not recounted (see run).
      const recount = !(taken.wasOurs && this.endedCleanly.has(key));
      this.endedCleanly.delete(key);
      const run = this.run(repos, taken.doc, recount)
        .then((clean) => {
          if (!clean) return;
          if (this.endedCleanly.size >= 10_000) this.endedCleanly.clear();
          this.endedCleanly.add(key);
        })
        .finally(() => this.running.delete(key));
      this.running.set(key, run);
    }
  }

  /** Takes (or renews) the campaign's lease; null when another dispatcher holds it. */
  private async lease(repos: TenantRepositories, doc: CampaignDoc): Promise<CampaignDoc | null> {
    return (await this.take(repos, doc))?.doc ?? null;
  }

  /** The lease, and whether this dispatcher held it last (its renewal) rather than taking it over from another or from none. */
  private async take(repos: TenantRepositories, doc: CampaignDoc): Promise<{ doc: CampaignDoc; wasOurs: boolean } | null> {
    const now = this.deps.now();
    const set = { $set: { lease_owner: this.options.owner, lease_until: now + this.leaseMs } };
    const renewed = await repos.campaigns.updateOne({ _id: doc._id, status: "sending", lease_owner: this.options.owner }, set);
    if (renewed) return { doc: renewed, wasOurs: true };
    const taken = await repos.campaigns.updateOne({ _id: doc._id, status: "sending", lease_until: { $lt: now } }, set);
    return taken && { doc: taken, wasOurs: false };
  }

  /**
   * The campaign as it is now, for the next step of its run; null when the
   * run must end (no longer sending, or the lease is another's). The lease is
   * renewed once a third of it has passed, not at every step: a run waiting
   * for room in flight steps every few milliseconds.
   */
  private async step(repos: TenantRepositories, taken: CampaignDoc): Promise<CampaignDoc | null> {
    const doc = await repos.campaigns.findOne({ _id: taken._id });
    if (!doc || doc.status !== "sending" || doc.lease_owner !== this.options.owner) return null;
    if ((doc.lease_until ?? 0) - this.deps.now() > (this.leaseMs * 2) / 3) return doc;
    return this.lease(repos, doc);
  }

  /**
   * Runs a campaign until it is sent, paused, cancelled or its lease lost;
   * resolves true when it ended with every step done (no error). `recount`:
   * the counts are recounted from the ledger first, which repairs a crash
   * between a ledger write and its count, and is needed unless this
   * dispatcher's own run ended cleanly last. Not otherwise: a recount sets
   * the counts from a count of the rows, and an outcome moving a row and its
   * count meanwhile (a resume hands the queued rows over again, which
   * delivery answers at once) would then be counted twice or not at all (a
   * pause and resume storm left a campaign `sending` for ever, its counts
   * saying a row was queued that the ledger had sent).
   */
  private async run(repos: TenantRepositories, taken: CampaignDoc, recount: boolean): Promise<boolean> {
    const log = this.deps.logger.child({ campaign_id: taken._id });
    const id = taken._id;
    try {
      // Recounted before the queued rows are handed over again, so that the answers to that do not race it.
      if (recount) await reconcile(repos, id);
      const position = positionOf(await repos.campaigns.findOne({ _id: id }));
      await this.handOverAgain(repos, taken, position, "", position);
      // When each stretch of rows up to `upTo` was last handed over (in id order): a stretch with no answer
      // after STALE_QUEUED_MS is handed over again. Everything handed over before this run was, just now.
      const handed: Array<{ upTo: string; at: number }> = position !== "" ? [{ upTo: position, at: this.deps.now() }] : [];
      let lastRecheck = this.deps.now();
      let stalled = { counts: "", since: this.deps.now(), waitMs: STALLED_COUNTS_MS };
      for (;;) {
        if (this.stopped) return true;
        const doc = await this.step(repos, taken);
        if (!doc) return true; // paused, cancelled, or the lease lost
        const inFlight = doc.counts?.queued ?? 0;
        const room = (this.deps.settings?.maxInFlight ?? 5000) - inFlight;
        // The snapshot and the hand-over interleave: a page is copied when nothing copied is left to hand
        // over, or nothing may be handed over now (the in-flight bound is reached: the wait for room is
        // spent copying), so that delivery gets the first recipients as soon as the first page is in.
        if (!doc.snapshot_complete && ((doc.counts?.pending ?? 0) === 0 || room <= 0)) {
          await snapshotAudience(this.deps, repos, doc, this.deps.now()); // one page
          continue;
        }
        if (room <= 0) {
          await sleep(20);
          continue;
        }
        const after = positionOf(doc);
        const limit = Math.min(HANDOFF_BATCH, room);
        let rows = await repos.recipients.find(
          { campaign_id: id, state: "pending", _id: rowRange(id, after) } as TenantFilter<RecipientDoc>,
          { sort: { _id: 1 }, limit },
        );
        // Past the position, nothing: rows delivery held for a pause are handed over again.
        const held = rows.length === 0 && (doc.counts?.pending ?? 0) > 0;
        if (held) rows = await repos.recipients.find({ campaign_id: id, state: "held" } as TenantFilter<RecipientDoc>, { limit });
        if (rows.length === 0) {
          const counts = doc.counts;
          if (doc.snapshot_complete && counts && counts.pending + counts.queued === 0) {
            // The counts say done; the ledger has the last word (a crash may have left the counts behind).
            const recounted = await reconcile(repos, id);
            if (recounted.pending + recounted.queued === 0) {
              await finishCampaign(this.deps, repos, doc);
              log.info({ counts: recounted }, "campaign sent");
              return true;
            }
          }
          const now = this.deps.now();
          const open = `${counts?.pending ?? 0}/${counts?.queued ?? 0}`;
          if (open !== stalled.counts) stalled = { counts: open, since: now, waitMs: STALLED_COUNTS_MS };
          const recheck = now - lastRecheck > STALE_QUEUED_MS;
          if (recheck || now - stalled.since > stalled.waitMs) {
            stalled = { ...stalled, since: now, waitMs: Math.min(STALE_QUEUED_MS, stalled.waitMs * 2) };
            if (recheck) {
              lastRecheck = now;
              await this.handOverStale(repos, doc, handed, now - STALE_QUEUED_MS);
            }
            // Counts left behind the ledger must not keep a finished campaign sending: when the ledger
            // has nothing left to wait for (no outcome can move a row and its count any more), it has
            // the last word, and the next step finishes the campaign.
            const ledger = await countLedger(repos, id);
            if (ledger.pending + ledger.queued === 0 && (counts?.pending ?? 0) + (counts?.queued ?? 0) !== 0) {
              log.warn({ counts, ledger }, "campaign counts were behind its ledger; recounted");
              await reconcile(repos, id);
            }
          }
          await sleep(100);
          continue;
        }
        const allowed = await this.budget(doc.tenant, rows.length);
        if (allowed === 0) continue;
        const batch = rows.slice(0, allowed);
        const now = this.deps.now();
        if (held) {
          // Held rows lie at or before the position: stored pending again, they are with delivery.
          await handOverHeld(repos, id, batch.map((r) => r._id), now);
        } else {
          // One write for the batch: the position and the counts (guarded: after a pause, a cancel or
          // another dispatcher's takeover since this step's read, nothing is handed over). Only the
          // lease's holder moves the position forward.
          const upTo = batch[batch.length - 1]!._id;
          const moved = await handOver(repos.campaigns, id, upTo, batch.length, { status: "sending", lease_owner: this.options.owner });
          if (!moved) continue;
          handed.push({ upTo, at: now });
        }
        await this.publish(doc, batch, now);
      }
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, "campaign run failed; it is taken up again");
      return false;
    } finally {
      await repos.campaigns
        .updateOne({ _id: id, lease_owner: this.options.owner }, { $set: { lease_until: 0 } })
        .catch(() => undefined);
    }
  }

  /** Publishes the send requests of rows handed over: ids only, RECIPIENTS_PER_EVENT rows an event (keyed by its first email id). */
  private async publish(doc: CampaignDoc, rows: readonly RecipientDoc[], now: number): Promise<void> {
    const requests: EncodedEvent[] = [];
    for (let i = 0; i < rows.length; i += RECIPIENTS_PER_EVENT) {
      requests.push(
        encodeEvent(
          "email.send.requested",
          { eventId: newId("evt"), tenant: doc.tenant, occurredAt: now },
          {
            campaignId: doc._id,
            templateId: doc.template_id,
            templateVersion: doc.template_version ?? 0,
            recipients: rows.slice(i, i + RECIPIENTS_PER_EVENT).map((row) => ({ emailId: row.email_id, subscriberId: row.subscriber_id })),
          },
        ),
      );
    }
    await publishEvents(this.bus, requests);
  }

  /** Hands over again every row with delivery within (`after`, `upTo`] (`position`, the hand-over's as just read, at most). */
  private async handOverAgain(repos: TenantRepositories, doc: CampaignDoc, position: string, after: string, upTo: string): Promise<void> {
    for (const filter of inFlight(doc._id, position, after, upTo)) {
      let from = after;
      for (;;) {
        const rows = await repos.recipients.find({ ...filter, _id: { ...(filter._id as object), $gt: from || `${doc._id}:` } } as TenantFilter<RecipientDoc>, {
          sort: { _id: 1 },
          limit: HANDOFF_BATCH,
        });
        if (rows.length === 0) break;
        await this.publish(doc, rows, this.deps.now());
        this.deps.logger.info({ campaign_id: doc._id, recipients: rows.length }, "recipients handed to delivery again");
        from = rows[rows.length - 1]!._id;
      }
    }
  }

  /**
   * Hands over again the stretches of rows (`handed`, in id order) last
   * handed over at or before `before` and still with delivery: they count as
   * handed over now.
   */
  private async handOverStale(repos: TenantRepositories, doc: CampaignDoc, handed: Array<{ upTo: string; at: number }>, before: number): Promise<void> {
    const now = this.deps.now();
    // Read once for every stretch: only this run moves it forward, and an erasure meanwhile moves it back past
    // a row already final (skipped), which no filter of the hand-over again matches.
    const position = positionOf(await repos.campaigns.findOne({ _id: doc._id }));
    let after = "";
    const kept: Array<{ upTo: string; at: number }> = [];
    for (const stretch of handed) {
      if (stretch.at <= before) {
        await this.handOverAgain(repos, doc, position, after, stretch.upTo);
        // Merged with a stretch handed over again just before it.
        if (kept.at(-1)?.at === now) kept.at(-1)!.upTo = stretch.upTo;
        else kept.push({ upTo: stretch.upTo, at: now });
      } else kept.push(stretch);
      after = stretch.upTo;
    }
    handed.splice(0, handed.length, ...kept);
  }

  /**
   * How many of `want` messages the tenant may hand over now (CAMPAIGN_RATE,
   * CAMPAIGN_DAILY_LIMIT and, in test mode, TEST_MODE_DAILY_LIMIT, counted in
   * the store, so they hold across restarts and replicas): charged as they
   * are handed over, so what is charged is what goes out. 0 after a wait of
   * at most a second, so that a pause or cancel is seen meanwhile, however
   * far off the budget is: a campaign over a budget waits for it.
   */
  private async budget(tenant: string, want: number): Promise<number> {
    const settings = this.deps.settings;
    const policies: Array<[string, Policy]> = [];
    if (settings?.rate) policies.push([`campaign-rate:${tenant}`, settings.rate]);
    if (settings?.dailyLimit) policies.push([`campaign-day:${tenant}`, { limit: settings.dailyLimit, windowMs: DAY_MS }]);
    if (settings?.testModeDailyLimit && tenantOfKey(tenant).mode === "test") {
      const quota = testModeBucket(tenant, settings.testModeDailyLimit);
      policies.push([quota.key, quota.policy]);
    }
    if (!this.limiter || policies.length === 0) return want;
    let cost = Math.min(want, ...policies.map(([, p]) => p.limit));
    for (let round = 0; round < 4 && cost > 0; round++) {
      const buckets: Bucket[] = policies.map(([key, policy]) => ({ key, policy, cost }));
      const outcome = await this.limiter.consume(buckets, this.deps.now());
      if (outcome.allowed) return cost;
      const fits = Math.min(...outcome.refusedBy.map((i) => outcome.states[i]!.remaining));
      if (fits <= 0 || fits >= cost) {
        await sleep(Math.min(Math.max(outcome.retryAfterMs, 10), 1000));
        return 0;
      }
      cost = fits;
    }
    return 0;
  }
}
