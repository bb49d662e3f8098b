import type { FireDoc, TriggerDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { fireCall, skipReasonOf, type FiringDeps, type SubscriberEvent } from "./fires.js";

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
      const skipped = skipReasonOf(event);
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

