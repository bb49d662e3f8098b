import { subscribeTopics, type CheckedMeta, type EventBus, type Subscription } from "@emailsvc/events";
import type { Logger } from "@emailsvc/runtime";
import type { Repositories } from "../storage/repositories.js";
import { deliverEmail, type DeliveryDeps } from "../usecases/deliver-email.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";

/** Consumer group of the delivery service (one name everywhere). */
export const DELIVERY_GROUP = "delivery";

/**
 * The consumer's capability to open the repositories of the tenant an event
 * names. It crosses tenants by nature (the tenant comes from the event's
 * checked meta, not from an authenticated call), so it is its own type, made
 * in server.ts and held by this consumer alone.
 */
export type RepositoriesOfEvent = (meta: CheckedMeta) => Repositories;

/**
 * Consumes `email.send.requested` (sends each email) and `subscriber.deleted`
 * (erases the subscriber's emails) in group `delivery`, one subscription for
 * both (see subscribeTopics). Decoding and checking each event is the topic
 * registry's (packages/events); a handler gets the message and its checked
 * meta. Stopping drains: no new events, the send in flight may finish within
 * the grace; past it the send is aborted and left to its lease (as a crash
 * would).
 */
export class SendConsumer {
  private subscription: Subscription | undefined;
  private readonly shutdown = new AbortController();

  constructor(
    private readonly bus: EventBus,
    private readonly deps: DeliveryDeps,
    private readonly repositoriesOf: RepositoriesOfEvent,
    private readonly logger: Logger,
    private readonly group: string = DELIVERY_GROUP,
  ) {}

  async start(): Promise<void> {
    this.subscription = await subscribeTopics(this.bus, {
      group: this.group,
      logger: this.logger,
      handlers: {
        "email.send.requested": (message, meta) => deliverEmail(this.deps, this.repositoriesOf(meta), message.emailId, this.shutdown.signal),
        "subscriber.deleted": async (message, meta) => {
          await eraseSubscriber(this.deps, this.repositoriesOf(meta), message.subscriberId);
        },
      },
    });
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
