import type { DecodedBatchEvent } from "@emailsvc/events";
import { SubscriberStatus, TRIGGER_EVENT_TYPE_NAMES, TRIGGER_EVENT_TYPES, type TriggerEventType, type TriggerEventTypeInfo } from "@emailsvc/proto";
import type { ConsumedTopic } from "@emailsvc/manifest";
import { Rerunner } from "@emailsvc/async";
import type { CrossTenantCollection } from "@emailsvc/storage";
import type { FireDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { fireDue } from "../usecases/fire-due.js";
import type { FiringDeps, SubscriberEvent } from "../usecases/fires.js";
import { recordFires } from "../usecases/record-fires.js";

/** A subscribers' topic some trigger event type comes from. */
export type TriggerSourceTopic = TriggerEventTypeInfo["topic"];

/** The topics triggers fire on, from the one list (proto/trigger-event-types.ts). */
export const TRIGGER_SOURCE_TOPICS: readonly TriggerSourceTopic[] = [...new Set(TRIGGER_EVENT_TYPE_NAMES.map((name) => TRIGGER_EVENT_TYPES[name].topic))];

// Each topic a trigger event type comes from is one the campaigns service's
// manifest entry says it consumes (packages/manifest, the list of its topics):
// a type from a topic the entry lacks does not compile; add the topic there.
type UndeclaredSource = Exclude<TriggerSourceTopic, ConsumedTopic<"campaigns">>;
const triggerSourcesDeclared: [UndeclaredSource] extends [never] ? true : UndeclaredSource = true;
void triggerSourcesDeclared;

type SourceEvent = DecodedBatchEvent<TriggerSourceTopic>;

/**
 * How an event of its topic is one of each type (undefined: it is not, e.g. a
 * status change to something else). A type of the list without its reader
 * does not compile.
 */
const READERS: { readonly [T in TriggerEventType]: (e: SourceEvent) => SubscriberEvent | undefined } = {
  // With the status it was created with: someone created other than active did not join (fires.ts, skipReasonOf).
  "subscriber.created": (e) => ({
    ...toEvent(e, "subscriber.created"),
    ...("status" in e.message ? { status: e.message.status } : {}),
    // Created by an import: its triggers fire only if the import asked (fires.ts, skipReasonOf).
    ...("importId" in e.message && e.message.importId ? { importId: e.message.importId, importRunsTriggers: e.message.importRunsTriggers } : {}),
  }),
  "subscriber.tag_added": (e) => toEvent(e, "subscriber.tag_added", tagOf(e)),
  // With what took the tag: leaving it by unsubscribing from everything fires nothing (fires.ts, skipReasonOf).
  "subscriber.tag_removed": (e) => ({ ...toEvent(e, "subscriber.tag_removed", tagOf(e)), ...("cause" in e.message ? { cause: e.message.cause } : {}) }),
  "subscriber.unsubscribed": (e) => ("toStatus" in e.message && e.message.toStatus === "unsubscribed" ? toEvent(e, "subscriber.unsubscribed") : undefined),
};

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

  /** Handlers of the subscribers' events, by topic: each reads the trigger event types of its topic (the list says which). */
  readonly handlers = Object.fromEntries(
    TRIGGER_SOURCE_TOPICS.map((topic) => {
      const types = TRIGGER_EVENT_TYPE_NAMES.filter((name) => TRIGGER_EVENT_TYPES[name].topic === topic);
      const read = (e: SourceEvent) => [...types.map((type) => READERS[type](e)), ...(topic === "subscriber.status_changed" ? [confirmationAsCreated(e)] : [])];
      const handler = (batch: SourceEvent[]) => this.record(batch.flatMap((e) => read(e).filter((event): event is SubscriberEvent => event !== undefined)));
      return [topic, handler];
    }),
  ) as Record<TriggerSourceTopic, (batch: SourceEvent[]) => Promise<void>>;

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

/**
 * A double opt-in confirmation (`pending` → `active`) is the signup that the
 * pending subscriber's `subscriber.created` was not (that one is skipped,
 * `created_not_active`): the `subscriber.created` triggers fire now, once
 * the person showed the address is theirs, so that no welcome mail goes to
 * someone who never confirmed. Its fires are keyed by this event's id.
 */
function confirmationAsCreated(e: SourceEvent): SubscriberEvent | undefined {
  if (!("toStatus" in e.message) || e.message.fromStatus !== "pending" || e.message.toStatus !== "active") return undefined;
  return { ...toEvent(e, "subscriber.created"), status: SubscriberStatus.ACTIVE };
}

function toEvent(e: SourceEvent, type: TriggerEventType, tagId?: string): SubscriberEvent {
  return {
    tenant: e.meta.tenant,
    eventId: e.meta.eventId,
    type,
    subscriberId: e.message.subscriberId,
    ...(tagId ? { tagId } : {}),
    occurredAt: e.meta.occurredAt,
  };
}

function tagOf(e: SourceEvent): string | undefined {
  return "tagId" in e.message ? e.message.tagId : undefined;
}
