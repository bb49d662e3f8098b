import { topicsProducedBy, type EventBus, type Topic } from "@emailsvc/events";
import { Outbox, type OutboxSettings } from "@emailsvc/outbox";
import type { Logger } from "@emailsvc/runtime";
import { AcrossTenants, type Collection } from "@emailsvc/storage";
import type { EmailDoc } from "../storage/documents.js";

/** Topics delivery produces (the registry's, packages/events). */
export const DELIVERY_PRODUCED_TOPICS = topicsProducedBy("delivery");
/** Topics delivery consumes; `subscriber.deleted` is the subscribers service's. */
export const DELIVERY_CONSUMED_TOPICS = ["email.send.requested", "subscriber.deleted"] as const satisfies readonly Topic[];
export const DELIVERY_TOPICS: Topic[] = [...new Set<Topic>([...DELIVERY_PRODUCED_TOPICS, ...DELIVERY_CONSUMED_TOPICS])];

/**
 * Delivery's outbox (the kit, @emailsvc/outbox): an email's send request and
 * status events, published keyed by email id, the send request before the
 * status that follows it. Events repeat rarely after a crash (each carries its
 * event_id; the send consumer is idempotent by email id) and are never lost.
 * Events carry ids and the status only: never the address, variables or content.
 */
export function deliveryOutbox(emails: Collection<EmailDoc>, bus: EventBus, logger: Logger, settings: OutboxSettings = {}): Outbox<EmailDoc> {
  return new Outbox<EmailDoc>({
    ...settings,
    // Crossing tenants, by name: the sweep finishes whatever a crash or a bus outage left, in any tenant.
    documents: new AcrossTenants(emails, "the outbox sweep publishes any tenant's pending email events"),
    bus,
    logger,
    event: (entry, doc) =>
      entry.topic === "email.send.requested"
        ? { topic: "email.send.requested", body: { emailId: doc._id } }
        : { topic: "email.status", body: { emailId: doc._id, status: entry.status ?? doc.status } },
  });
}
