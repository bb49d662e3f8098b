import { subscribeEventBatches, type DecodedBatchEvent, type EventBus, type Subscription, type TopicBatchHandlers } from "@emailsvc/events";
import type { ConsumedTopic } from "@emailsvc/manifest";
import type { Logger } from "@emailsvc/telemetry";
import { READERS, type WebhookEvent } from "../domain/event-types.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";
import { hasActiveEndpoint, recordDeliveries } from "../usecases/record-deliveries.js";

/** Consumer group of the webhooks service (one name everywhere). */
export const WEBHOOKS_GROUP = "webhooks";

type Consumed = ConsumedTopic<"webhooks">;

/**
 * The service's one subscription: every topic it forwards, each event read
 * by the one table (domain/event-types.ts, READERS) and recorded as a
 * delivery per matching endpoint before the bus moves past it.
 */
export function subscribeWebhookEvents(
  bus: EventBus,
  options: {
    group?: string;
    logger: Logger;
    tenants: { forTenant(tenant: string): TenantRepositories };
    now: () => number;
    /** Called when new deliveries were recorded (the sender's kick). */
    recorded: () => void;
  },
): Promise<Subscription> {
  const record = async (events: WebhookEvent[]): Promise<void> => {
    const byTenant = new Map<string, WebhookEvent[]>();
    for (const event of events) {
      const list = byTenant.get(event.tenant);
      if (list) list.push(event);
      else byTenant.set(event.tenant, [event]);
    }
    let recorded = 0;
    for (const [tenant, list] of byTenant) recorded += await recordDeliveries(options, options.tenants.forTenant(tenant), list);
    if (recorded > 0) options.recorded();
  };
  const handler =
    <T extends Consumed>(topic: T) =>
    async (batch: Array<DecodedBatchEvent<T>>) => {
      const read = READERS[topic] as (e: DecodedBatchEvent<T>) => WebhookEvent | readonly WebhookEvent[] | undefined;
      const events: WebhookEvent[] = [];
      for (const source of batch) {
        const webhookEvents = read(source);
        if (webhookEvents === undefined) continue;
        // email.status reads as one webhook event per email it carries (a batch of a campaign's outcomes: many).
        if (Array.isArray(webhookEvents)) events.push(...(webhookEvents as readonly WebhookEvent[]));
        else events.push(webhookEvents as WebhookEvent);
      }
      await record(events);
    };
  return subscribeEventBatches(bus, {
    group: options.group ?? WEBHOOKS_GROUP,
    logger: options.logger,
    maxBatch: 500,
    // On Kafka, wait up to 100 ms for more events per fetch (SubscribeOptions.gatherMs):
    // most events match no endpoint, and the lookup and the fetch cost per batch.
    gatherMs: 100,
    // Most events concern a tenant without an active endpoint (every email.status of a campaign of an
    // account that set none up): those are passed over undecoded. Asked per batch, at handling time,
    // as recordDeliveries' own lookup is, so an endpoint created while events flow gets every event
    // handled after it.
    tenants: async (_topic, tenants) => {
      const wanted = new Set<string>();
      for (const tenant of tenants) if (await hasActiveEndpoint(options.tenants.forTenant(tenant))) wanted.add(tenant);
      return wanted;
    },
    handlers: {
      "email.status": handler("email.status"),
      "subscriber.created": handler("subscriber.created"),
      "subscriber.status_changed": handler("subscriber.status_changed"),
      "subscriber.tag_added": handler("subscriber.tag_added"),
      "subscriber.tag_removed": handler("subscriber.tag_removed"),
      "subscriber.deleted": async (batch) => {
        // The integrator hears of the erasure; what the log held about the subscriber goes.
        await handler("subscriber.deleted")(batch);
        for (const { message, meta } of batch) await eraseSubscriber(options.tenants.forTenant(meta.tenant), message.subscriberId);
      },
      "campaign.status_changed": handler("campaign.status_changed"),
      // A handler for each topic the manifest says webhooks consumes: one missing does not compile.
    } satisfies TopicBatchHandlers & Record<Consumed, unknown>,
  });
}
