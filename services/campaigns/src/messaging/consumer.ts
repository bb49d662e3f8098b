import { emailOutcomesOf, subscribeEventBatches, type EventBus, type Subscription, type TopicBatchHandlers } from "@emailsvc/events";
import type { ConsumedTopic } from "@emailsvc/manifest";
import type { Logger } from "@emailsvc/telemetry";
import type { TenantRepositories } from "../storage/repositories.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";
import { recordOutcomes, type EmailOutcome } from "../usecases/record-outcomes.js";
import type { TriggerWorker } from "./triggers.js";

/** Consumer group of the campaigns service (one name everywhere). */
export const CAMPAIGNS_GROUP = "campaigns";
/** How long a fetch of the group may wait for more events on Kafka (SubscribeOptions.gatherMs). */
const CAMPAIGNS_GATHER_MS = 100;

/**
 * The service's one subscription (group `campaigns`): kafkajs hands a group's
 * partitions to its members whatever each subscribed to, so the triggers and
 * the ledger share it. Subscriber events fire triggers; delivery's
 * `email.status` of campaign emails moves the ledger, including the
 * recipients it refused (who may be mailed is decided once, by delivery on
 * the subscribers service's answer, when a recipient is handed over: someone
 * who unsubscribes mid-campaign is skipped then, with delivery's reason).
 */
export function subscribeCampaignEvents(
  bus: EventBus,
  options: {
    group?: string;
    logger: Logger;
    triggers: TriggerWorker;
    tenants: { forTenant(tenant: string): TenantRepositories };
    now: () => number;
    /** Rewrites the datafiles an erasure deleted from (CampaignStorage.compactAfterErasure). */
    compactAfterErasure?: () => Promise<void>;
  },
): Promise<Subscription> {
  const { triggers, tenants, now } = options;
  return subscribeEventBatches(bus, {
    group: options.group ?? CAMPAIGNS_GROUP,
    logger: options.logger,
    maxBatch: 500,
    // On Kafka, wait up to 100 ms for more outcomes per fetch: the ledger's
    // writes and the counts' update are per batch, and delivery publishes its
    // outcomes in small batches (about 40 a partition); a trigger fires that
    // much later at most.
    gatherMs: CAMPAIGNS_GATHER_MS,
    handlers: {
      ...triggers.handlers,
      "subscriber.deleted": async (batch) => {
        // Erasure: the subscriber's fires and ledger rows go (the counts keep them as numbers).
        for (const { message, meta } of batch) await eraseSubscriber(tenants.forTenant(meta.tenant), message.subscriberId, now());
        // The erased lines leave the embedded store's datafiles (also after a redelivery that
        // found nothing left, in case a crash came before this); nothing on MongoDB.
        await options.compactAfterErasure?.();
      },
      "email.status": async (batch) => {
        // Each event's outcomes: a batch's (delivery's campaign emails), or the one email's (a bounce, an email
        // outside campaigns, a delivery from before batches).
        const byTenant = new Map<string, EmailOutcome[]>();
        for (const { message, meta } of batch) {
          let list: EmailOutcome[] | undefined;
          for (const outcome of emailOutcomesOf(message)) {
            if (!outcome.campaignId) continue;
            list ??= byTenant.get(meta.tenant);
            if (!list) byTenant.set(meta.tenant, (list = []));
            list.push(outcome);
          }
        }
        for (const [tenant, outcomes] of byTenant) await recordOutcomes(tenants.forTenant(tenant), outcomes, now());
      },
      // A handler for each topic the manifest says campaigns consumes (the one list): one missing does not
      // compile; one the manifest lacks is refused when the service subscribes (DeclaredTopicsEventBus).
    } satisfies TopicBatchHandlers & Record<ConsumedTopic<"campaigns">, unknown>,
  });
}
