import { fromBinary } from "@bufbuild/protobuf";
import type { EventBus, ReceivedEvent, Subscription } from "@emailsvc/events";
import { events } from "@emailsvc/proto";
import { isId, type Logger } from "@emailsvc/runtime";
import { deliverEmail, type DeliveryDeps } from "../usecases/deliver-email.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";
import { DELIVERY_CONSUMED_TOPICS } from "./outbox-relay.js";

/** Consumer group of the delivery service (one name everywhere). */
export const DELIVERY_GROUP = "delivery";

/**
 * Consumes `email.send.requested` (sends each email) and `subscriber.deleted`
 * (erases the subscriber's emails) in group `delivery`. One subscription for
 * both: kafkajs' assigner hands a group's partitions to its members whatever
 * each subscribed to, so two subscriptions of one group could each receive
 * the other's topic.
 * Stopping drains: no new events, the send in flight may finish within the
 * grace; past it the send is aborted and left to its lease (as a crash would).
 */
export class SendConsumer {
  private subscription: Subscription | undefined;
  private readonly shutdown = new AbortController();

  constructor(
    private readonly bus: EventBus,
    private readonly deps: DeliveryDeps,
    private readonly logger: Logger,
    private readonly group: string = DELIVERY_GROUP,
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.bus.subscribe({
      group: this.group,
      topics: [...DELIVERY_CONSUMED_TOPICS],
      handler: (event) => this.handle(event),
    });
  }

  private async handle(event: ReceivedEvent): Promise<void> {
    if (event.topic === "subscriber.deleted") return this.handleDeleted(event);
    let request;
    try {
      request = fromBinary(events.EmailSendRequestedSchema, event.value);
    } catch {
      this.logger.error({ topic: event.topic, key: event.key }, "undecodable email.send.requested event skipped");
      return;
    }
    const meta = request.meta;
    if (!meta || !isId("eml", request.emailId) || !isId("acc", meta.accountId) || (meta.mode !== "live" && meta.mode !== "test")) {
      this.logger.error({ key: event.key }, "malformed email.send.requested event skipped");
      return;
    }
    await deliverEmail(this.deps, { tenant: `${meta.accountId}:${meta.mode}`, emailId: request.emailId }, this.shutdown.signal);
  }

  private async handleDeleted(event: ReceivedEvent): Promise<void> {
    let deleted;
    try {
      deleted = fromBinary(events.SubscriberDeletedSchema, event.value);
    } catch {
      this.logger.error({ topic: event.topic, key: event.key }, "undecodable subscriber.deleted event skipped");
      return;
    }
    const meta = deleted.meta;
    if (!meta || !isId("sub", deleted.subscriberId) || !isId("acc", meta.accountId) || (meta.mode !== "live" && meta.mode !== "test")) {
      this.logger.error({ key: event.key }, "malformed subscriber.deleted event skipped");
      return;
    }
    await eraseSubscriber(this.deps, { tenant: `${meta.accountId}:${meta.mode}`, subscriberId: deleted.subscriberId });
  }

  /** Stops consuming; a send still running after `graceMs` is aborted. */
  async stop(graceMs: number): Promise<void> {
    if (!this.subscription) return;
    const timer = setTimeout(() => this.shutdown.abort(), graceMs);
    try {
      await this.subscription.stop();
    } finally {
      clearTimeout(timer);
    }
  }
}
