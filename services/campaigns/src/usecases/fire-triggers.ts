import { settleLimited, tenantOfKey, type CallContext, type Logger } from "@emailsvc/runtime";
import type { CrossTenantCollection } from "@emailsvc/storage";
import type { EventType } from "../domain/trigger.js";
import { PermanentSendError, type FiringServices } from "../rpc/clients.js";
import type { FireDoc, TriggerDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

// Firing triggers: an event records one fire per matching active trigger
// (exactly once per event and trigger, by the fire's id), and the firer sends
// each fire when it is due, through delivery, with the fire's id as the
// idempotency key, so a fire sent twice (a crash after the send, before the
// write) is one email.

export interface FiringDeps {
  firing: FiringServices;
  logger: Logger;
  now: () => number;
}

/** A subscriber event, as the consumer read it (ids only). */
export interface SubscriberEvent {
  tenant: string;
  eventId: string;
  type: EventType;
  subscriberId: string;
  /** For tag events. */
  tagId?: string;
  /** For subscriber.created: the status it was created with ("" when the event did not say). */
  status?: string;
  occurredAt: number;
}

/**
 * Whether an event is what its type promises: `subscriber.created` is someone
 * joining, which a subscriber created other than active is not (an import of
 * an opt-out, the record a one-click unsubscribe of a non-subscriber keeps);
 * its fires are recorded skipped with this reason, and nobody is welcomed
 * right after unsubscribing.
 */
function notAnEvent(event: SubscriberEvent): string | undefined {
  return event.type === "subscriber.created" && event.status && event.status !== "active" ? "created_not_active" : undefined;
}

/** How long one firing attempt holds its fire. */
const FIRE_LEASE_MS = 30_000;
/** Fires sent at once. */
const FIRE_CONCURRENCY = 8;

/** The context a fire acts in: its tenant, as the trigger (for audit and logs). */
export function fireCall(fire: Pick<FireDoc, "tenant" | "trigger_id" | "_id">): CallContext {
  return { tenant: tenantOfKey(fire.tenant), actor: `trigger:${fire.trigger_id}`, requestId: fire._id };
}

/**
 * Records the fires of a tenant's events: one per active trigger on the
 * event's type (and tag, if the trigger names one). Fires already recorded
 * (the event delivered again) are skipped. Returns how many are new.
 */
export async function recordFires(deps: FiringDeps, repos: TenantRepositories, events: readonly SubscriberEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const types = [...new Set(events.map((e) => e.type))];
  const triggers = await repos.triggers.find({ event_type: { $in: types }, is_active: true });
  if (triggers.length === 0) return 0;
  const call = fireCall({ tenant: repos.triggers.tenant, trigger_id: "matching", _id: events[0]!.eventId });
  const tagNames = new Map<string, Promise<string | undefined>>();
  const tagName = (id: string) => {
    let name = tagNames.get(id);
    if (!name) tagNames.set(id, (name = deps.firing.tagName(call, id)));
    return name;
  };
  const fires: Array<Omit<FireDoc, "tenant">> = [];
  const now = deps.now();
  for (const event of events) {
    for (const trigger of triggers.filter((t) => t.event_type === event.type)) {
      if (!(await matchesTag(trigger, event, tagName))) continue;
      const skipped = notAnEvent(event);
      fires.push({
        _id: `${event.eventId}:${trigger._id}`,
        trigger_id: trigger._id,
        event_id: event.eventId,
        subscriber_id: event.subscriberId,
        template_id: trigger.template_id,
        event_type: trigger.event_type,
        state: skipped ? "skipped" : "pending",
        reason: skipped ?? "",
        email_id: "",
        // The delay counts from the event (a consumer catching up sends what is overdue at once).
        due_at: (event.occurredAt > 0 ? event.occurredAt : now) + trigger.delay_seconds * 1000,
        lease_until: 0,
        attempts: 0,
        created_at: now,
        updated_at: now,
      });
    }
  }
  if (fires.length === 0) return 0;
  return (await repos.fires.insertMany(fires)).inserted;
}

async function matchesTag(trigger: TriggerDoc, event: SubscriberEvent, tagName: (id: string) => Promise<string | undefined>): Promise<boolean> {
  if (!trigger.tag) return true;
  if (!event.tagId) return false;
  const name = await tagName(event.tagId);
  return name !== undefined && name.toLowerCase() === trigger.tag.toLowerCase();
}

/**
 * Sends the fires that are due (up to `limit`), a few at once; returns how
 * many it took. Each is claimed with a lease first, so two firers never send
 * one fire at once, and a firer that died mid-send leaves it to the next
 * after the lease.
 */
export async function fireDue(
  deps: FiringDeps,
  due: CrossTenantCollection<FireDoc>,
  forTenant: (tenant: string) => TenantRepositories,
  limit = 100,
): Promise<number> {
  const now = deps.now();
  const fires = await due.find({ state: "pending", due_at: { $lte: now } }, { sort: { due_at: 1 }, limit });
  const ready = fires.filter((fire) => fire.lease_until < now);
  const results = await settleLimited(ready, FIRE_CONCURRENCY, (fire) => fireOne(deps, forTenant(fire.tenant), fire));
  for (const result of results) {
    if (result.status === "rejected") deps.logger.warn({ err: String(result.reason) }, "firing a trigger failed; it is tried again");
  }
  return ready.length;
}

async function fireOne(deps: FiringDeps, repos: TenantRepositories, fire: FireDoc): Promise<void> {
  const now = deps.now();
  const claimed = await repos.fires.updateOne(
    { _id: fire._id, state: "pending", lease_until: { $lt: now } },
    { $set: { lease_until: now + FIRE_LEASE_MS, updated_at: now }, $inc: { attempts: 1 } },
  );
  if (!claimed) return; // another firer has it, or it is done
  const call = fireCall(claimed);
  const finish = (state: FireDoc["state"], reason: string, emailId = "") =>
    repos.fires.updateOne({ _id: claimed._id, state: "pending" }, { $set: { state, reason, email_id: emailId, lease_until: 0, updated_at: deps.now() } });
  try {
    // A trigger disabled or deleted before its fire was due sends nothing.
    const trigger = await repos.triggers.findOne({ _id: claimed.trigger_id });
    if (!trigger || !trigger.is_active) return void (await finish("skipped", "trigger_inactive"));
    const [subscriber, slug] = await Promise.all([
      deps.firing.subscriber(call, claimed.subscriber_id),
      deps.firing.templateSlug(call, claimed.template_id),
    ]);
    // Erased meanwhile (or before this fire was recorded: events of two topics come in no fixed
    // order): the fire goes, as the erasure's; nothing of the subscriber is kept.
    if (!subscriber) return void (await repos.fires.deleteOne({ _id: claimed._id }));
    if (!slug) return void (await finish("failed", "template_not_found"));
    const sent = await deps.firing.send(call, { templateSlug: slug, to: subscriber.email, idempotencyKey: `trigger-fire:${claimed._id}` });
    // Refused by delivery (the recipient may not get this category of mail): recorded, never retried.
    if (sent.refused) return void (await finish("skipped", sent.refused, sent.emailId));
    await finish("sent", "", sent.emailId);
  } catch (err) {
    if (err instanceof PermanentSendError) {
      await finish("failed", err.code);
      return;
    }
    // Not now (a service unreachable): free it, later by a backoff that grows with the attempts.
    const backoffMs = Math.min(60_000, 500 * 2 ** Math.min(claimed.attempts, 7));
    await repos.fires.updateOne(
      { _id: claimed._id, state: "pending" },
      { $set: { lease_until: 0, due_at: deps.now() + backoffMs, updated_at: deps.now() } },
    );
    throw err;
  }
}
