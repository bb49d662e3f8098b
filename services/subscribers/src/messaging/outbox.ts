import { DuplicateKeyError, type TenantCollection } from "@emailsvc/storage";
import { encodeEvent, type EncodedEvent, type EventBus, type EventOrigin } from "@emailsvc/events";
import { clearOutbox, OutboxRelay } from "@emailsvc/outbox";
import type { Logger } from "@emailsvc/telemetry";
import { events, SubscriberStatus } from "@emailsvc/proto";
import { isStatus } from "../domain/subscriber.js";
import { statusToProto } from "../rpc/mapping.js";
import type { AuditDoc, OutboxEntry, SubscriberDoc, SubscriberTopic } from "../storage/documents.js";
import type { SubscriberStorage } from "../storage/repositories.js";
import type { ConfirmationMailer } from "../usecases/ports.js";

export interface SubscriberOutboxOptions {
  storage: SubscriberStorage;
  bus: EventBus;
  logger: Logger;
  clock: () => number;
  sweepIntervalMs?: number;
  sweepGraceMs?: number;
  /** Hands double opt-in confirmation mail to delivery; none: it is logged as not sent (the subscriber expires unconfirmed). */
  confirmations?: ConfirmationMailer;
}

/**
 * The relay of subscribers' outboxes (@emailsvc/outbox) with the service's
 * own effects: each entry's audit record is written (keyed by the event id, so
 * a repeat is a no-op) before its event is published, and a deleted
 * subscriber's tombstone ends with its audit trail and itself deleted, rather
 * than with a cleared outbox.
 */
export function subscriberOutbox(options: SubscriberOutboxOptions): OutboxRelay<SubscriberDoc> {
  const audit = options.storage.auditOfChanges();
  const erasures = options.storage.erasureRequests();
  return new OutboxRelay<SubscriberDoc>({
    documents: options.storage.outboxSweep(),
    bus: options.bus,
    logger: options.logger,
    name: "subscribers",
    clock: options.clock,
    events: eventsOf,
    async effect(doc, entry) {
      // A tombstone's history is erased, so its earlier entries are not audited.
      if (!entry.audit || doc.deleted) return;
      // Only while the subscriber still waits for it (not confirmed or moved on by the API meanwhile).
      if (entry.mail && doc.status === "pending") {
        if (options.confirmations) {
          await options.confirmations.send({ tenant: doc.tenant, email: doc.email, locale: doc.locale ?? "", template: entry.mail.template, idempotencyKey: entry.id });
        } else {
          options.logger.warn({ tenant: doc.tenant }, "no delivery service configured: a confirmation mail was not sent");
        }
      }
      try {
        await audit.forTenant(doc.tenant).insertOne(auditRecord(doc, entry, entry.audit));
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err; // written before a crash
      }
    },
    // An import's batch: its audit records in one insertMany per tenant (those written before a crash are skipped as duplicates).
    async effects(items) {
      const byTenant = new Map<string, AuditDoc[]>();
      for (const { doc, entry } of items) {
        if (!entry.audit || doc.deleted) continue;
        const records = byTenant.get(doc.tenant) ?? [];
        if (records.length === 0) byTenant.set(doc.tenant, records);
        records.push(auditRecord(doc, entry, entry.audit));
      }
      for (const [tenant, records] of byTenant) await audit.forTenant(tenant).insertMany(records.map(({ tenant: _t, ...record }) => record));
    },
    async complete(doc, documents: TenantCollection<SubscriberDoc>) {
      if (!doc.deleted) return clearOutbox(doc, documents);
      await audit.forTenant(doc.tenant).deleteMany({ subscriber_id: doc._id });
      const gone = await documents.deleteOne({ _id: doc._id, version: doc.version });
      if (!gone) return false;
      if (doc.erasure_request) {
        await erasures
          .forTenant(doc.tenant)
          .updateOne({ _id: doc.erasure_request, outcome: "erasing" }, { $set: { outcome: "erased", completed_at: options.clock() } });
      }
      // The embedded store keeps deleted lines in its datafiles until they are
      // rewritten: rewrite them now (shared with other erasures meanwhile), in
      // the background; on MongoDB this does nothing.
      options.storage.compactAfterErasure().catch((err: unknown) => {
        options.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "compaction after an erasure failed; the periodic one follows");
      });
      return true;
    },
    sweepIntervalMs: options.sweepIntervalMs,
    sweepGraceMs: options.sweepGraceMs,
  });
}

function auditRecord(doc: SubscriberDoc, entry: OutboxEntry, data: Record<string, unknown>): AuditDoc {
  return {
    _id: entry.id,
    tenant: doc.tenant,
    subscriber_id: doc._id,
    type: entry.type,
    occurred_at: entry.at,
    actor: entry.actor,
    source: entry.source ?? "",
    ip: entry.ip ?? "",
    user_agent: entry.user_agent ?? "",
    data,
  };
}

/** The bus event of an entry, by ids only (never the address or metadata); none for audit-only entries. */
function eventsOf(doc: SubscriberDoc, entry: OutboxEntry): EncodedEvent[] {
  const bus = entry.bus;
  if (!bus) return [];
  const origin: EventOrigin = { eventId: entry.id, tenant: doc.tenant, occurredAt: entry.at };
  const subscriberId = doc._id;
  switch (bus.topic) {
    case "subscriber.created":
      // An outbox entry written before the status was carried has none: unspecified.
      return [
        encodeEvent(bus.topic, origin, {
          subscriberId,
          tagIds: bus.tag_ids ?? [],
          status: bus.to !== undefined && isStatus(bus.to) ? statusToProto(bus.to) : SubscriberStatus.UNSPECIFIED,
          importId: bus.import_id ?? "",
          importRunsTriggers: bus.run_triggers ?? false,
        }),
      ];
    case "subscriber.status_changed":
      return [encodeEvent(bus.topic, origin, { subscriberId, fromStatus: bus.from ?? "", toStatus: bus.to ?? "" })];
    case "subscriber.tag_added":
      return [encodeEvent(bus.topic, origin, { subscriberId, tagId: bus.tag_id ?? "" })];
    case "subscriber.tag_removed":
      return [
        encodeEvent(bus.topic, origin, {
          subscriberId,
          tagId: bus.tag_id ?? "",
          cause: bus.cause === "unsubscribe_all" ? events.TagRemovalCause.UNSUBSCRIBE_ALL : events.TagRemovalCause.UNSPECIFIED,
        }),
      ];
    case "subscriber.deleted":
      return [encodeEvent(bus.topic, origin, { subscriberId })];
    default:
      throw new Error(`unknown topic ${String((bus as { topic: unknown }).topic)} in an outbox entry`);
  }
}
