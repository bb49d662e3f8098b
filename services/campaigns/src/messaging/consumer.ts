import { subscribeEventBatches, type EventBus, type Subscription, type Topic } from "@emailsvc/events";
import type { Logger } from "@emailsvc/runtime";
import type { SkipReason } from "../domain/campaign.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";
import { recordOutcomes, type EmailOutcome } from "../usecases/record-outcomes.js";
import { skipSubscriber } from "../usecases/skip-subscriber.js";
import { TRIGGER_SOURCE_TOPICS, type TriggerWorker } from "./triggers.js";

/** Consumer group of the campaigns service (one name everywhere). */
export const CAMPAIGNS_GROUP = "campaigns";

/** Every topic the campaigns service consumes: those triggers fire on (from the one list), and the ledger's. */
export const CAMPAIGNS_CONSUMED_TOPICS: readonly Topic[] = [
  ...new Set<Topic>([...TRIGGER_SOURCE_TOPICS, "subscriber.status_changed", "subscriber.deleted", "email.status"]),
];

/** Topics it produces: a campaign's hand-offs, and its changes of status. */
export const CAMPAIGNS_PRODUCED_TOPICS = ["email.send.requested", "campaign.status_changed"] as const satisfies readonly Topic[];

/** Why a subscriber of a new status gets no more campaign mail. */
const SKIP_FOR_STATUS: Record<string, SkipReason> = { unsubscribed: "unsubscribed", bounced: "suppressed", complained: "suppressed" };

/**
 * The service's one subscription (group `campaigns`): kafkajs hands a group's
 * partitions to its members whatever each subscribed to, so the triggers and
 * the ledger share it. Subscriber events fire triggers and, when a subscriber
 * stops being mailable, skip their recipients not yet handed over; delivery's
 * `email.status` of campaign emails moves the ledger.
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
    handlers: {
      ...triggers.handlers,
      "subscriber.status_changed": async (batch) => {
        await triggers.handlers["subscriber.status_changed"]?.(batch);
        for (const { message, meta } of batch) {
          const reason = SKIP_FOR_STATUS[message.toStatus];
          if (reason) await skipSubscriber(tenants.forTenant(meta.tenant), message.subscriberId, reason, now());
        }
      },
      "subscriber.deleted": async (batch) => {
        // Erasure: the subscriber's fires and ledger rows go (the counts keep them as numbers).
        for (const { message, meta } of batch) await eraseSubscriber(tenants.forTenant(meta.tenant), message.subscriberId, now());
        // The erased lines leave the embedded store's datafiles (also after a redelivery that
        // found nothing left, in case a crash came before this); nothing on MongoDB.
        await options.compactAfterErasure?.();
      },
      "email.status": async (batch) => {
        const byTenant = new Map<string, EmailOutcome[]>();
        for (const { message, meta } of batch) {
          if (!message.campaignId) continue;
          const list = byTenant.get(meta.tenant) ?? [];
          list.push({ campaignId: message.campaignId, subscriberId: message.subscriberId, status: message.status, reason: message.reason });
          byTenant.set(meta.tenant, list);
        }
        for (const [tenant, outcomes] of byTenant) await recordOutcomes(tenants.forTenant(tenant), outcomes, now());
      },
    },
  });
}
