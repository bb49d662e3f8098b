import { subscribeEvents, type EventBus, type Subscription } from "@emailsvc/events";
import type { Logger } from "@emailsvc/runtime";
import type { TenantRepositories } from "../storage/repositories.js";
import { deliverEmail, type DeliveryDeps } from "../usecases/deliver-email.js";
import { eraseSubscriber } from "../usecases/erase-subscriber.js";

/** Consumer group of the delivery service (one name everywhere). */
export const DELIVERY_GROUP = "delivery";

/**
 * Consumes `email.send.requested` (sends each email) and `subscriber.deleted`
 * (erases the subscriber's emails) in group `delivery`, through the topic
 * registry of @emailsvc/events (which decodes, checks and skips malformed
 * events). One subscription for both: kafkajs' assigner hands a group's
 * partitions to its members whatever each subscribed to, so two subscriptions
 * of one group could each receive the other's topic. Each event's tenant
 * comes from its checked meta: `tenants` is the capability to cross to it.
 * Stopping drains: no new events, the send in flight may finish within the
 * grace; past it the send is aborted and left to its lease (as a crash would).
 */
export class SendConsumer {
  private subscription: Subscription | undefined;
  private readonly shutdown = new AbortController();

  constructor(
    private readonly bus: EventBus,
    private readonly tenants: { forTenant(tenant: string): TenantRepositories },
    private readonly deps: DeliveryDeps,
    private readonly logger: Logger,
    private readonly group: string = DELIVERY_GROUP,
  ) {}

  async start(): Promise<void> {
    this.subscription = await subscribeEvents(this.bus, {
      group: this.group,
      logger: this.logger,
      handlers: {
        "email.send.requested": (message, meta) =>
          deliverEmail(this.deps, this.tenants.forTenant(meta.tenant), message.emailId, this.shutdown.signal),
        "subscriber.deleted": async (message, meta) => {
          await eraseSubscriber(this.deps, this.tenants.forTenant(meta.tenant), { subscriberId: message.subscriberId });
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
