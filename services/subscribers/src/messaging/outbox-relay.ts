import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { events } from "@emailsvc/proto";
import type { EventBus } from "@emailsvc/events";
import { DuplicateKeyError, type Collection } from "@emailsvc/storage";
import type { Logger } from "@emailsvc/runtime";
import type { AuditDoc, OutboxEntry, SubscriberDoc } from "../storage/documents.js";

export const SUBSCRIBER_TOPICS = [
  "subscriber.created",
  "subscriber.status_changed",
  "subscriber.tag_added",
  "subscriber.tag_removed",
  "subscriber.deleted",
] as const;

/**
 * Carries out the side effects a change left in its document's outbox: writes
 * the audit records and publishes the bus events, then clears the outbox
 * guarded by the document's version. A change is one single-document write, so
 * a crash anywhere leaves either no change or a change whose outbox the sweep
 * finishes later. Effects may repeat after a crash (audit inserts are keyed by
 * event id; bus consumers dedupe by event_id), but are never lost.
 */
export class OutboxRelay {
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      subscribers: Collection<SubscriberDoc>;
      audit: Collection<AuditDoc>;
      bus: EventBus;
      logger: Logger;
      /** How often the sweep looks for outboxes a crash or bus outage left behind. */
      sweepIntervalMs?: number;
      /** A pending outbox younger than this is left to the request that made it. */
      sweepGraceMs?: number;
    },
  ) {}

  /** Finishes the outbox of `doc` (as returned by the write that filled it). */
  flush(doc: SubscriberDoc): Promise<void> {
    const running = this.inFlight.get(doc._id);
    if (running) return running.then(() => this.flush(doc));
    const job = this.flushLoop(doc).finally(() => this.inFlight.delete(doc._id));
    this.inFlight.set(doc._id, job);
    return job;
  }

  private async flushLoop(first: SubscriberDoc): Promise<void> {
    let doc: SubscriberDoc | null = first;
    for (let attempt = 0; doc && doc.outbox_pending && attempt < 5; attempt++) {
      for (const entry of doc.outbox) {
        // A tombstone's history is erased, so its earlier entries are not audited.
        if (entry.audit && !doc.deleted) await this.writeAudit(doc, entry);
        if (entry.bus) await this.publish(doc, entry);
      }
      if (doc.deleted) {
        await this.deps.audit.deleteMany({ tenant: doc.tenant, subscriber_id: doc._id });
        if (await this.deps.subscribers.deleteOne({ _id: doc._id, version: doc.version })) return;
      } else {
        const cleared = await this.deps.subscribers.updateOne(
          { _id: doc._id, version: doc.version },
          { $set: { outbox: [], outbox_pending: false } },
        );
        if (cleared) return;
      }
      // A concurrent change added entries: go again with what is stored now.
      doc = await this.deps.subscribers.findOne({ _id: first._id });
    }
  }

  private async writeAudit(doc: SubscriberDoc, entry: OutboxEntry): Promise<void> {
    try {
      await this.deps.audit.insertOne({
        _id: entry.id,
        tenant: doc.tenant,
        subscriber_id: doc._id,
        type: entry.type,
        occurred_at: entry.at,
        actor: entry.actor,
        data: entry.audit ?? {},
      });
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err; // already written before a crash
    }
  }

  private async publish(doc: SubscriberDoc, entry: OutboxEntry): Promise<void> {
    const bus = entry.bus!;
    const [accountId = "", mode = ""] = doc.tenant.split(":");
    const meta = create(events.EventMetaSchema, {
      eventId: entry.id,
      accountId,
      mode,
      occurredAt: timestampFromMs(entry.at),
    });
    const subscriberId = doc._id;
    let value: Uint8Array;
    switch (bus.topic) {
      case "subscriber.created":
        value = toBinary(events.SubscriberCreatedSchema, create(events.SubscriberCreatedSchema, { meta, subscriberId, tagIds: bus.tag_ids ?? [] }));
        break;
      case "subscriber.status_changed":
        value = toBinary(
          events.SubscriberStatusChangedSchema,
          create(events.SubscriberStatusChangedSchema, { meta, subscriberId, fromStatus: bus.from ?? "", toStatus: bus.to ?? "" }),
        );
        break;
      case "subscriber.tag_added":
        value = toBinary(events.SubscriberTagAddedSchema, create(events.SubscriberTagAddedSchema, { meta, subscriberId, tagId: bus.tag_id ?? "" }));
        break;
      case "subscriber.tag_removed":
        value = toBinary(events.SubscriberTagRemovedSchema, create(events.SubscriberTagRemovedSchema, { meta, subscriberId, tagId: bus.tag_id ?? "" }));
        break;
      case "subscriber.deleted":
        value = toBinary(events.SubscriberDeletedSchema, create(events.SubscriberDeletedSchema, { meta, subscriberId }));
        break;
      default:
        throw new Error(`unknown topic ${bus.topic}`);
    }
    await this.deps.bus.publish(bus.topic, [
      { key: subscriberId, value, headers: { "event-id": entry.id, "event-type": bus.topic } },
    ]);
  }

  /** Starts the periodic sweep. */
  start(): void {
    const interval = this.deps.sweepIntervalMs ?? 2000;
    const tick = () => {
      this.sweeping = this.sweep()
        .then(() => undefined)
        .catch((err: unknown) => this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "outbox sweep failed"))
        .finally(() => {
          this.sweeping = undefined;
          if (this.timer) this.timer = setTimeout(tick, interval);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** One pass over pending outboxes; returns how many documents it finished. */
  async sweep(): Promise<number> {
    const olderThan = Date.now() - (this.deps.sweepGraceMs ?? 5000);
    const pending = await this.deps.subscribers.find({ outbox_pending: true, updated_at: { $lt: olderThan } }, { limit: 100 });
    for (const doc of pending) await this.flush(doc);
    return pending.length;
  }

  /** Stops the sweep and waits for every flush under way. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.sweeping;
    await Promise.allSettled([...this.inFlight.values()]);
  }
}
