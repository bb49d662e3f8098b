import type { DecodedBatchEvent, Topic } from "@emailsvc/events";
import { Rerunner } from "@emailsvc/runtime";
import type { CrossTenantCollection } from "@emailsvc/storage";
import type { FireDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { fireDue } from "../usecases/fire-due.js";
import type { FiringDeps, SubscriberEvent } from "../usecases/fires.js";
import { recordFires } from "../usecases/record-fires.js";

/** The topics triggers fire on (and erasure). */
export const TRIGGER_TOPICS = [
  "subscriber.created",
  "subscriber.tag_added",
  "subscriber.tag_removed",
  "subscriber.status_changed",
  "subscriber.deleted",
] as const satisfies readonly Topic[];

/**
 * Triggers at work: the handlers of the subscribers' events that record the
 * fires they cause (the service's consumer, messaging/consumer.ts, calls
 * them), and a firer that sends the due fires: at once after new fires were
 * recorded, and on a timer for delayed ones and for fires a crash or an
 * outage left (fires are stored, so a restart resumes them).
 */
export class TriggerWorker {
  private timer: NodeJS.Timeout | undefined;
  /** The firer: one run at a time; a full page means more may be due, so it goes on at once. */
  private readonly firer = new Rerunner(
    async () => {
      while (!this.firer.isStopped && (await fireDue(this.deps, this.due, (t) => this.tenants.forTenant(t))) >= 100);
    },
    (err) => this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "trigger firer failed; retrying on its timer"),
  );

  constructor(
    private readonly tenants: { forTenant(tenant: string): TenantRepositories },
    private readonly due: CrossTenantCollection<FireDoc>,
    private readonly deps: FiringDeps,
    private readonly options: { intervalMs?: number } = {},
  ) {}

  /** Handlers of the subscribers' events, by topic. */
  readonly handlers = {
    "subscriber.created": (batch: DecodedBatchEvent<"subscriber.created">[]) => this.record(batch.map((e) => toEvent(e, "subscriber.created"))),
    "subscriber.tag_added": (batch: DecodedBatchEvent<"subscriber.tag_added">[]) =>
      this.record(batch.map((e) => toEvent(e, "subscriber.tag_added", e.message.tagId))),
    "subscriber.tag_removed": (batch: DecodedBatchEvent<"subscriber.tag_removed">[]) =>
      this.record(batch.map((e) => toEvent(e, "subscriber.tag_removed", e.message.tagId))),
    "subscriber.status_changed": (batch: DecodedBatchEvent<"subscriber.status_changed">[]) =>
      this.record(batch.filter((e) => e.message.toStatus === "unsubscribed").map((e) => toEvent(e, "subscriber.unsubscribed"))),
  };

  /** Starts the firer's timer (and a first run). */
  start(): void {
    this.timer = setInterval(() => this.kick(), this.options.intervalMs ?? 1000);
    this.timer.unref();
    this.kick();
  }

  /** Records the fires of a batch (per tenant), then sends what is due. */
  private async record(events: SubscriberEvent[]): Promise<void> {
    const byTenant = new Map<string, SubscriberEvent[]>();
    for (const event of events) byTenant.set(event.tenant, [...(byTenant.get(event.tenant) ?? []), event]);
    let recorded = 0;
    for (const [tenant, list] of byTenant) recorded += await recordFires(this.deps, this.tenants.forTenant(tenant), list);
    if (recorded > 0) this.kick();
  }

  private kick(): void {
    this.firer.kick();
  }

  /** Stops firing; a fire in flight finishes (or is left to its lease). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.firer.stop();
  }
}

function toEvent(
  e: DecodedBatchEvent<"subscriber.created" | "subscriber.tag_added" | "subscriber.tag_removed" | "subscriber.status_changed">,
  type: SubscriberEvent["type"],
  tagId?: string,
): SubscriberEvent {
  return {
    tenant: e.meta.tenant,
    eventId: e.meta.eventId,
    type,
    subscriberId: e.message.subscriberId,
    ...(tagId ? { tagId } : {}),
    occurredAt: e.meta.occurredAt,
  };
}
