import { setMaxListeners } from "node:events";
import { publishEvents, subscribeEventBatches, type EncodedEvent, type EventBus, type Subscription } from "@emailsvc/events";
import { settleLimited } from "@emailsvc/async";
import { type Logger } from "@emailsvc/telemetry";
import type { TenantRepositories } from "../storage/repositories.js";
import { CancelledCampaigns, intakeCampaignRequests, PausedCampaigns, type CampaignRequest, type IntakeDeps } from "../usecases/campaign-intake.js";
import { deliverEmail, type CampaignSend, type DeliveryDeps } from "../usecases/deliver-email.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";

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
 * Default of DELIVERY_CONCURRENCY: emails of one batch in flight at once. 32
 * rather than 16: on Kafka a 100,000-recipient campaign took 35–41 s against
 * 45–50 s (fewer, larger batches: fewer outcome publishes and commits), the
 * same within the noise in one process (bench/README.md).
 */
export const DEFAULT_SEND_CONCURRENCY = 32;

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
 * A campaign's recipients arrive as send requests naming the campaign, the
 * subscriber and the template version (see usecases/campaign-intake.ts): the
 * batch's records are made first (one lookup, one insert per tenant), then
 * sent like the others. `campaign.status_changed` (a subscription of its
 * own, see campaignStatesGroup) keeps the cancelled campaigns, whose
 * recipients not yet given to the provider are not sent, and the paused ones,
 * whose recipients are held until campaigns hands them over again.
 *
 * Stopping drains: no new events, the sends in flight may finish within the
 * grace; past it they are aborted and left to their leases (as a crash would).
 */
export class SendConsumer {
  private subscription: Subscription | undefined;
  private statesSubscription: Subscription | undefined;
  private readonly shutdown = new AbortController();
  private readonly intake: IntakeDeps;

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
          // email id -> its tenant (and what the campaign intake learnt), each once
          const emails = new Map<string, { tenant: string; campaign?: CampaignSend }>();
          const campaignRequests = new Map<string, CampaignRequest[]>(); // tenant -> requests
          for (const { message, meta } of batch) {
            if (!message.campaignId) {
              emails.set(message.emailId, { tenant: meta.tenant });
              continue;
            }
            const list = campaignRequests.get(meta.tenant) ?? [];
            list.push(message);
            campaignRequests.set(meta.tenant, list);
          }
          const outcomes: EncodedEvent[] = []; // campaign emails' email.status, published once for the batch
          for (const [tenant, requests] of campaignRequests) {
            for (const { emailId, campaign } of await intakeCampaignRequests(this.intake, this.tenants.forTenant(tenant), requests, this.shutdown.signal, outcomes)) {
              emails.set(emailId, { tenant, campaign });
            }
          }
          const results = await settleLimited([...emails], this.concurrency, ([emailId, { tenant, campaign }]) =>
            deliverEmail(this.deps, this.tenants.forTenant(tenant), emailId, this.shutdown.signal, campaign),
          );
          // The intake's lease groups close once their emails are done; this makes sure (idempotent).
          for (const { campaign } of emails.values()) campaign?.claimed?.leases.close();
          if (outcomes.length > 0) await this.intake.publish(outcomes);
          const failed = results.find((result) => result.status === "rejected");
          if (failed) throw failed.reason;
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

  /** Stops consuming; a send still running after `graceMs` is aborted. */
  async stop(graceMs: number): Promise<void> {
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
