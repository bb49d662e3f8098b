import { topicsProducedBy, type AnyEvent, type EventBus } from "@emailsvc/events";
import { Outbox, type OutboxSettings } from "@emailsvc/outbox";
import type { Logger } from "@emailsvc/runtime";
import { AcrossTenants, AnyTenant, DuplicateKeyError } from "@emailsvc/storage";
import type { SubscriberDoc, SubscriberEntry } from "../storage/documents.js";
import type { Collections } from "../storage/repositories.js";

/** The topics the subscribers service produces (the registry's, packages/events). */
export const SUBSCRIBER_TOPICS = topicsProducedBy("subscribers");

/**
 * The subscribers' outbox (the kit, @emailsvc/outbox): each entry's audit
 * record, then its bus event; a tombstone's audit trail and the tombstone
 * itself are deleted once its subscriber.deleted event is out. Effects repeat
 * after a crash and are harmless: the audit insert is keyed by the event id.
 */
export function subscriberOutbox(collections: Collections, bus: EventBus, logger: Logger, settings: OutboxSettings = {}): Outbox<SubscriberDoc> {
  // Crossing tenants, by name: the sweep finds pending changes of every
  // tenant, and each change's audit records are written to its own tenant.
  const subscribers = new AcrossTenants(collections.subscribers, "the outbox sweep finishes any tenant's pending changes");
  const audit = new AnyTenant(collections.audit, "an outbox entry's audit record belongs to the tenant of its subscriber");
  return new Outbox<SubscriberDoc>({
    ...settings,
    documents: subscribers,
    bus,
    logger,
    event: (entry, doc) => busEvent(entry, doc._id),
    async effect(entry, doc) {
      // A tombstone's history is erased, so its earlier entries are not audited.
      if (entry.audit === null || doc.deleted) return;
      try {
        await audit.of(doc.tenant).insertOne({
          _id: entry.id,
          subscriber_id: doc._id,
          type: entry.type,
          occurred_at: entry.at,
          actor: entry.actor,
          data: entry.audit,
        });
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err; // written before a crash
      }
    },
    async complete(doc) {
      if (!doc.deleted) return "clear";
      await audit.of(doc.tenant).deleteMany({ subscriber_id: doc._id });
      return "delete";
    },
  });
}

function busEvent(entry: SubscriberEntry, subscriberId: string): AnyEvent | null {
  const bus = entry.bus;
  if (bus === null) return null;
  switch (bus.topic) {
    case "subscriber.created":
      // Entries written before the types were this strict may lack a field: read them leniently.
      return { topic: bus.topic, body: { subscriberId, tagIds: bus.tag_ids ?? [] } };
    case "subscriber.status_changed":
      return { topic: bus.topic, body: { subscriberId, fromStatus: bus.from ?? "", toStatus: bus.to ?? "" } };
    case "subscriber.tag_added":
    case "subscriber.tag_removed":
      return { topic: bus.topic, body: { subscriberId, tagId: bus.tag_id ?? "" } };
    case "subscriber.deleted":
      return { topic: bus.topic, body: { subscriberId } };
  }
}
