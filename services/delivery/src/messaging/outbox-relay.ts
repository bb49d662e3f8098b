import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { EventBus, OutgoingEvent } from "@emailsvc/events";
import { events } from "@emailsvc/proto";
import { newId, type Logger } from "@emailsvc/runtime";
import type { Collection } from "@emailsvc/storage";
import type { EmailDoc, OutboxEntry } from "../storage/documents.js";

/** Topics delivery produces. */
export const DELIVERY_PRODUCED_TOPICS = ["email.send.requested", "email.status"] as const;
/**
 * Topics delivery consumes. `subscriber.deleted` is produced by the subscribers
 * service (named the same there; delivery does not import that service).
 */
export const DELIVERY_CONSUMED_TOPICS = ["email.send.requested", "subscriber.deleted"] as const;
export const DELIVERY_TOPICS = [...new Set([...DELIVERY_PRODUCED_TOPICS, ...DELIVERY_CONSUMED_TOPICS])];

export interface OutboxRelayOptions {
  emails: Collection<EmailDoc>;
  bus: EventBus;
  logger: Logger;
  /** How often the sweeps run (default 2 s). */
  sweepIntervalMs?: number;
  /** A pending outbox younger than this is left to the write that made it (default 5 s). */
  sweepGraceMs?: number;
  /**
   * A queued email untouched for this long, with no lease and nothing pending,
   * gets a fresh send request (default 10 min). That covers an in-process bus
   * that lost its events in a restart; on Kafka it is a rarely needed safety net.
   */
  stalledAfterMs?: number;
  now?: () => number;
}

/**
 * Publishes the events a change left in its email's outbox, then clears the
 * outbox guarded by the email's version. A change is one single-document
 * write, so a crash anywhere leaves either no change or a change whose outbox
 * the sweep publishes later. Events may repeat after a crash (each carries its
 * event_id; the send consumer is idempotent by email id), but are never lost.
 *
 * Events carry ids and the status only: never the address, variables or content.
 */
export class OutboxRelay {
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: OutboxRelayOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Publishes the outbox of `doc` (as returned by the write that filled it). */
  flush(doc: EmailDoc): Promise<void> {
    const running = this.inFlight.get(doc._id);
    // One flush per email at a time; one that waited reads the email again, since
    // the flush before it may have published and cleared what its copy holds.
    const job = running
      ? running.then(() => this.options.emails.findOne({ _id: doc._id })).then((fresh) => (fresh ? this.flushLoop(fresh) : undefined))
      : this.flushLoop(doc);
    const tracked = job.finally(() => {
      if (this.inFlight.get(doc._id) === tracked) this.inFlight.delete(doc._id);
    });
    this.inFlight.set(doc._id, tracked);
    return tracked;
  }

  private async flushLoop(first: EmailDoc): Promise<void> {
    let doc: EmailDoc | null = first;
    const published = new Set<string>();
    for (let attempt = 0; doc && doc.outbox_pending && attempt < 5; attempt++) {
      // After a concurrent change only its new entries go out; those already published stay published.
      const fresh = doc.outbox.filter((entry) => !published.has(entry.id));
      await this.publish(doc, fresh);
      fresh.forEach((entry) => published.add(entry.id));
      const cleared = await this.options.emails.updateOne(
        { _id: doc._id, version: doc.version },
        { $set: { outbox: [], outbox_pending: false } },
      );
      if (cleared) return;
      // A concurrent change added entries: go again with what is stored now.
      doc = await this.options.emails.findOne({ _id: first._id });
    }
  }

  /** One batch per topic; keyed by email id so that one email's events stay in order. */
  private async publish(doc: EmailDoc, entries: OutboxEntry[]): Promise<void> {
    const [accountId = "", mode = ""] = doc.tenant.split(":");
    const byTopic = new Map<string, OutgoingEvent[]>();
    for (const entry of entries) {
      const meta = create(events.EventMetaSchema, { eventId: entry.id, accountId, mode, occurredAt: timestampFromMs(entry.at) });
      const value =
        entry.topic === "email.send.requested"
          ? toBinary(events.EmailSendRequestedSchema, create(events.EmailSendRequestedSchema, { meta, emailId: doc._id }))
          : toBinary(
              events.EmailStatusChangedSchema,
              create(events.EmailStatusChangedSchema, { meta, emailId: doc._id, status: entry.status ?? doc.status }),
            );
      const list = byTopic.get(entry.topic) ?? [];
      list.push({ key: doc._id, value, headers: { "event-id": entry.id, "event-type": entry.topic } });
      byTopic.set(entry.topic, list);
    }
    // Status events after the send request they follow, for readers of both topics.
    for (const topic of DELIVERY_PRODUCED_TOPICS) {
      const list = byTopic.get(topic);
      if (list) await this.options.bus.publish(topic, list);
    }
  }

  /** Starts the periodic sweeps. */
  start(): void {
    const interval = this.options.sweepIntervalMs ?? 2000;
    const tick = () => {
      this.sweeping = this.sweep()
        .then(() => this.requeueStalled())
        .then(() => undefined)
        .catch((err: unknown) => this.options.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "outbox sweep failed"))
        .finally(() => {
          this.sweeping = undefined;
          if (this.timer) this.timer = setTimeout(tick, interval);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** One pass over pending outboxes; returns how many emails it finished. */
  async sweep(): Promise<number> {
    const olderThan = this.now() - (this.options.sweepGraceMs ?? 5000);
    const pending = await this.options.emails.find({ outbox_pending: true, updated_at: { $lt: olderThan } }, { limit: 100 });
    for (const doc of pending) await this.flush(doc);
    return pending.length;
  }

  /**
   * Gives queued emails that nothing is happening to a fresh send request:
   * no lease held, nothing pending, untouched for `stalledAfterMs`. The
   * request is written to the outbox first (guarded by version), then published.
   */
  async requeueStalled(): Promise<number> {
    const now = this.now();
    const stalled = await this.options.emails.find(
      { status: "queued", updated_at: { $lt: now - (this.options.stalledAfterMs ?? 10 * 60_000) } },
      { limit: 100 },
    );
    let requeued = 0;
    for (const doc of stalled) {
      if (doc.outbox_pending || doc.lease_until > now) continue;
      const entry: OutboxEntry = { id: newId("evt"), topic: "email.send.requested", at: now };
      const updated = await this.options.emails.updateOne(
        { _id: doc._id, version: doc.version, status: "queued", outbox_pending: false },
        { $set: { outbox_pending: true, updated_at: now }, $push: { outbox: { $each: [entry] } }, $inc: { version: 1 } },
      );
      if (!updated) continue;
      requeued++;
      this.options.logger.warn({ email_id: doc._id }, "stalled email: send requested again");
      await this.flush(updated);
    }
    return requeued;
  }

  /** Stops the sweeps and waits for every flush under way. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.sweeping;
    await Promise.allSettled([...this.inFlight.values()]);
  }
}
