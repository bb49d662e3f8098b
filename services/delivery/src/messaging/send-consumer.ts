import { setMaxListeners } from "node:events";
import { publishEvents, subscribeEventBatches, type EventBus, type Subscription } from "@emailsvc/events";
import { type Logger } from "@emailsvc/telemetry";
import type { TenantRepositories } from "../storage/repositories.js";
import { campaignRequestsOf, CancelledCampaigns, intakeCampaignRequests, PausedCampaigns, type CampaignRequest, type IntakeDeps } from "../usecases/campaign-intake.js";
import { deliverEmail, RetryLater, type CampaignSend, type DeliveryDeps } from "../usecases/deliver-email.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";
import type { LeaseGroup } from "../usecases/lease.js";
import { CampaignOutcomes } from "./outbox.js";

/** Consumer group of the delivery service (one name everywhere). */
export const DELIVERY_GROUP = "delivery";

/**
 * The group of delivery's consumer of `campaign.status_changed`, apart from
 * the send requests': on Kafka a member handles one fetched batch at a time,
 * so a pause or cancel in the same group would wait behind the very send
 * batch it has to stop.
 */
export function campaignStatesGroup(group: string): string {
  return `${group}.campaign-states`;
}

/**
 * Default of DELIVERY_CONCURRENCY: emails of one batch in flight at once. 64
 * rather than 32 since SMTP sends whole transactions pipelined (BDAT): 32
 * kept about 1.6 sends on each of `?pool=20`'s connections, so the relay's
 * round trips, not the two cores, set the pace; at 64 a 100,000-recipient
 * campaign through SMTP took about a tenth less time and CPU in one process,
 * for 5–10 MB more peak memory (bench/README.md, "Sends in flight"). 32
 * rather than 16 before that: on Kafka 35–41 s against 45–50 s (fewer,
 * larger batches: fewer outcome publishes and commits).
 */
export const DEFAULT_SEND_CONCURRENCY = 64;

/**
 * A campaign's recipients taken in at a time, in multiples of the
 * concurrency (see SendConsumer.send): with the fewer than `concurrency`
 * left waiting when a window is taken in, a record waits behind at most four
 * times `concurrency` others, as when each recipient was an event of its own
 * and a bus batch held four times `concurrency` of them.
 */
const INTAKE_WINDOWS = 3;

/**
 * Outcomes (email.status) of a batch's campaign emails published together,
 * in multiples of the concurrency: gathered while the next windows are taken
 * in, so that a batch of thousands makes no more publishes (a produce
 * request each on Kafka) than its bus batches of four times `concurrency`
 * recipients did before batches, and campaigns still hears of them long
 * before its in-flight bound (5,000) fills. Each publish is one event a
 * tenant (up to OUTCOMES_PER_EVENT outcomes, messaging/outbox.ts).
 */
const OUTCOMES_PER_PUBLISH = 8;

/**
 * Consumes `email.send.requested` (sends each email) and `subscriber.deleted`
 * (erases the subscriber's emails) in group `delivery`, through the topic
 * registry of @emailsvc/events (which decodes, checks and skips malformed
 * events). One subscription for both: kafkajs' assigner hands a group's
 * partitions to its members whatever each subscribed to, so two subscriptions
 * of one group could each receive the other's topic. Each event's tenant
 * comes from its checked meta: `tenants` is the capability to cross to it.
 *
 * Send requests come in batches (up to four times `concurrency` waiting
 * events of a partition), and up to `concurrency` emails of a batch are sent
 * at once: each send waits mostly on its provider and on the store, so one
 * at a time would leave both idle (and the store's group append has nothing
 * to group). Each email is still claimed by its lease, so a repeated event is
 * a no-op; an email named twice in one batch is sent once. When any send of a
 * batch asks to be retried, the batch comes again after the bus' backoff:
 * the ones already sent are then skipped (final), the others tried again.
 *
 * A campaign's recipients arrive as send requests naming the campaign and
 * the template version once and up to a hundred recipients (or, from before
 * batches, one): see usecases/campaign-intake.ts and `send` below. Their
 * records are made a window at a time (one lookup, one insert per tenant),
 * then sent like the others. `campaign.status_changed` (a subscription of its
 * own, see campaignStatesGroup) keeps the cancelled campaigns, whose
 * recipients not yet given to the provider are not sent, and the paused ones,
 * whose recipients are held until campaigns hands them over again.
 *
 * Stopping drains: no new events, no more recipients taken in, the sends in
 * flight may finish within the grace; past it they are aborted and left to
 * their leases (as a crash would).
 */
export class SendConsumer {
  private subscription: Subscription | undefined;
  private statesSubscription: Subscription | undefined;
  private readonly shutdown = new AbortController();
  private readonly intake: IntakeDeps;
  /** Set by stop(): the batch in hand takes in no more recipients. */
  private stopping = false;

  constructor(
    private readonly bus: EventBus,
    private readonly tenants: { forTenant(tenant: string): TenantRepositories },
    private readonly deps: DeliveryDeps,
    private readonly logger: Logger,
    private readonly group: string = DELIVERY_GROUP,
    private readonly concurrency: number = DEFAULT_SEND_CONCURRENCY,
  ) {
    // Each send in flight listens for the shutdown (its attempt's lease, see
    // deliver-email.ts): up to `concurrency` per partition, beyond Node's
    // default warning threshold of 10 for one signal.
    setMaxListeners(0, this.shutdown.signal);
    this.intake = {
      ...deps,
      cancelledCampaigns: new CancelledCampaigns(deps.now),
      pausedCampaigns: new PausedCampaigns(deps.now),
      publish: (events) => publishEvents(bus, events),
      campaignOutcomes: () => new CampaignOutcomes(deps.now, deps.outcomeBatches ?? true),
    };
  }

  async start(): Promise<void> {
    this.statesSubscription = await subscribeEventBatches(this.bus, {
      group: campaignStatesGroup(this.group),
      logger: this.logger,
      maxBatch: 100,
      handlers: {
        "campaign.status_changed": async (batch) => {
          for (const { message, meta } of batch) {
            const scope = this.tenants.forTenant(meta.tenant);
            const at = meta.occurredAt || this.deps.now();
            if (message.status === "cancelled") await this.intake.cancelledCampaigns.record(scope, message.campaignId, at);
            await this.intake.pausedCampaigns.record(scope, message.campaignId, message.status, at);
          }
        },
      },
    });
    this.subscription = await subscribeEventBatches(this.bus, {
      group: this.group,
      logger: this.logger,
      maxBatch: this.concurrency * 4,
      handlers: {
        "email.send.requested": async (batch) => {
          const stored: Array<{ emailId: string; tenant: string }> = []; // emails delivery stored itself (SendEmail)
          const campaignRequests = new Map<string, CampaignRequest[]>(); // tenant -> a campaign's recipients, in order
          // Each email once: a recipient handed over again may come twice in one batch (in two windows, its second
          // turn would find its own lease and ask for the whole batch again).
          const named = new Set<string>();
          for (const { message, meta } of batch) {
            if (!message.campaignId) {
              if (!named.has(message.emailId)) stored.push({ emailId: message.emailId, tenant: meta.tenant });
              named.add(message.emailId);
              continue;
            }
            let list = campaignRequests.get(meta.tenant);
            if (!list) campaignRequests.set(meta.tenant, (list = []));
            for (const request of campaignRequestsOf(message)) {
              if (named.has(request.emailId)) continue;
              named.add(request.emailId);
              list.push(request);
            }
          }
          await this.send(stored, campaignRequests);
        },
        "subscriber.deleted": async (batch) => {
          // In order: erasures of one subscriber are idempotent, and few.
          for (const { message, meta } of batch) {
            await eraseSubscriber(this.deps, this.tenants.forTenant(meta.tenant), { subscriberId: message.subscriberId });
          }
          // The erased lines leave the embedded store's datafiles (once per batch; also after
          // a redelivery that found nothing left to erase, in case a crash came before this).
          await this.deps.compactAfterErasure?.();
        },
      },
    });
  }

  /**
   * Sends a batch's emails, up to `concurrency` at once: those delivery stored
   * first, then a campaign's recipients, taken in (records stored, leased)
   * a window of INTAKE_WINDOWS times `concurrency` at a time as the sends
   * make room: the next window's intake runs while fewer than `concurrency`
   * wait, so that the sends never wait for it, and no record waits leased
   * behind more than four times `concurrency` others (one bus batch of a
   * recipient per event, before batches). A batch of thousands is thus never
   * stored, leased and sent at once. The emails' outcomes are published
   * OUTCOMES_PER_PUBLISH times `concurrency` at a time and at the end. Throws (the batch
   * comes again, its settled emails skipped by their records) when a send or
   * an intake asked for it, after the others are done; when stopping, the
   * windows not yet taken in are left for the redelivery.
   */
  private async send(stored: ReadonlyArray<{ emailId: string; tenant: string }>, campaignRequests: ReadonlyMap<string, CampaignRequest[]>): Promise<void> {
    const windowSize = this.concurrency * INTAKE_WINDOWS;
    const windows: Array<{ tenant: string; requests: CampaignRequest[] }> = [];
    for (const [tenant, requests] of campaignRequests) {
      for (let i = 0; i < requests.length; i += windowSize) windows.push({ tenant, requests: requests.slice(i, i + windowSize) });
    }
    const queue: Array<{ emailId: string; tenant: string; campaign?: CampaignSend }> = [...stored];
    // Each tenant's collections made once for the batch, not for each of its emails (six holders and a sandbox's closures each).
    const scopes = new Map<string, TenantRepositories>();
    const scopeOf = (tenant: string): TenantRepositories => {
      let scope = scopes.get(tenant);
      if (!scope) scopes.set(tenant, (scope = this.tenants.forTenant(tenant)));
      return scope;
    };
    let next = 0; // the next window to take in
    const outcomes = this.intake.campaignOutcomes(); // campaign emails' email.status, published OUTCOMES_PER_PUBLISH × concurrency at a time
    // The windows' lease groups (one a window), not their emails: what was sent is let go as it goes.
    const leaseGroups = new Set<LeaseGroup>();
    let failure: unknown;
    let intakeFailure: unknown;
    let intake: Promise<void> | undefined;
    const takeIn = async (): Promise<void> => {
      const { tenant, requests } = windows[next++]!;
      if (outcomes.size >= this.concurrency * OUTCOMES_PER_PUBLISH) await this.intake.publish(outcomes.take());
      for (const { emailId, campaign } of await intakeCampaignRequests(this.intake, scopeOf(tenant), requests, this.shutdown.signal, outcomes)) {
        queue.push({ emailId, tenant, campaign });
        if (campaign.claimed) leaseGroups.add(campaign.claimed.leases);
      }
    };
    const takeInSoon = (): void => {
      if (intake || intakeFailure !== undefined || next >= windows.length || queue.length >= this.concurrency || this.stopping) return;
      intake = takeIn()
        .catch((err: unknown) => void (intakeFailure = err))
        .finally(() => (intake = undefined));
    };
    const worker = async (): Promise<void> => {
      for (;;) {
        takeInSoon();
        const item = queue.shift();
        if (item) {
          try {
            await deliverEmail(this.deps, scopeOf(item.tenant), item.emailId, this.shutdown.signal, item.campaign);
          } catch (err) {
            failure ??= err;
          }
          continue;
        }
        if (!intake) return; // nothing waiting, nothing coming
        await intake;
      }
    };
    await Promise.all(Array.from({ length: this.concurrency }, worker));
    // The intake's lease groups close once their emails are done; this makes sure (idempotent).
    for (const leases of leaseGroups) leases.close();
    if (outcomes.size > 0) await this.intake.publish(outcomes.take());
    if (intakeFailure !== undefined) throw intakeFailure;
    if (failure !== undefined) throw failure;
    if (next < windows.length) throw new RetryLater("stopping: recipients not taken in are left for the redelivered batch");
  }

  /** Stops consuming; a send still running after `graceMs` is aborted. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    await this.statesSubscription?.stop();
    if (!this.subscription) return;
    const timer = setTimeout(() => this.shutdown.abort(), graceMs);
    try {
      await this.subscription.stop();
    } finally {
      clearTimeout(timer);
    }
  }
}
